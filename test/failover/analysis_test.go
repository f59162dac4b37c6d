package failover_test

import (
	"context"
	"errors"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rmq-go/rmq"
)

// never marks a slot that did not recover before the run ended.
const never = time.Duration(-1)

// runReport is what a run's records add up to. Times are offsets from t0.
type runReport struct {
	sends      []sendRecord
	deliveries []deliveryRecord
	skipped    int

	acked, failed     int
	errKinds          map[string]int // normalised error text → failed Sends
	times             map[int]int    // seq → deliveries
	deliveredDistinct int
	duplicates        int   // deliveries beyond the first of a message
	lost              []int // acknowledged, never delivered
	lostBeforeKill    int   // of lost: acknowledged before the kill
	lostOutage        int   // of lost: acknowledged between the kill and the promotion
	lostAfterPromo    []int // of lost: acknowledged at or after the promotion
	failedDelivered   int   // Sends that failed, yet their message was delivered

	slots  [topicSlots]slotReport
	groups []groupReport
}

// slotReport is one slot's recovery.
type slotReport struct {
	master  string
	killed  bool          // its master was the one killed
	firstOK time.Duration // from the promotion to the first Send acknowledged at or after it; never if none
	firstIn time.Duration // from the promotion to the first delivery at or after it; never if none
	// firstOKRejoined is from when the rejoined replica was online to the
	// first Send acknowledged at or after it (replica-ack variant); never if none.
	firstOKRejoined time.Duration
	lost            int
	preKill         bool // it had an acknowledged Send and a delivery before the kill
}

// groupReport is the slots of one master, and their delivery rates.
type groupReport struct {
	master       string
	slots        []int
	killed       bool
	pre, outage  float64 // deliveries per second before the kill and from the kill to the promotion
	preWindowOK  bool    // the pre-kill window is long enough to judge
	outageWindow time.Duration
	// after is the deliveries per second from the promotion until the
	// producers stopped, over afterWindow.
	after       float64
	afterWindow time.Duration
}

// preKillFrom is where the pre-kill rate window starts (the first rows are
// still filling the pipeline).
const preKillFrom = 250 * time.Millisecond

func (r *failoverRun) since(at time.Time) time.Duration { return at.Sub(r.t0) }

// analyse adds up the records.
func (r *failoverRun) analyse() *runReport {
	rep := &runReport{errKinds: map[string]int{}, times: map[int]int{}}
	rep.sends, rep.deliveries, rep.skipped = r.rec.snapshot()
	for _, d := range rep.deliveries {
		rep.times[d.seq]++
	}
	rep.deliveredDistinct = len(rep.times)
	for _, n := range rep.times {
		rep.duplicates += n - 1
	}
	for i := range rep.slots {
		rep.slots[i] = slotReport{master: r.d.slotMaster[i], killed: r.d.slotMaster[i] == r.d.victim,
			firstOK: never, firstIn: never, firstOKRejoined: never}
	}
	var okBefore, inBefore [topicSlots]bool
	for _, s := range rep.sends {
		end := r.since(s.end)
		if s.err != nil {
			rep.failed++
			where := "other slots"
			if rep.slots[s.slot].killed {
				where = "killed master's slots"
			}
			rep.errKinds[where+": "+errKind(s.err)]++
			if rep.times[s.seq] > 0 {
				rep.failedDelivered++
			}
			continue
		}
		rep.acked++
		sl := &rep.slots[s.slot]
		if end < r.killed {
			okBefore[s.slot] = true
		}
		if end >= r.promote && (sl.firstOK == never || end-r.promote < sl.firstOK) {
			sl.firstOK = end - r.promote
		}
		if ro := r.replicaOnline; ro != never && end >= ro && (sl.firstOKRejoined == never || end-ro < sl.firstOKRejoined) {
			sl.firstOKRejoined = end - ro
		}
		if rep.times[s.seq] > 0 {
			continue
		}
		rep.lost = append(rep.lost, s.seq)
		sl.lost++
		switch {
		case end < r.killed:
			rep.lostBeforeKill++
		case end < r.promote:
			rep.lostOutage++
		default:
			rep.lostAfterPromo = append(rep.lostAfterPromo, s.seq)
		}
	}
	slices.Sort(rep.lost)
	slices.Sort(rep.lostAfterPromo)
	for _, d := range rep.deliveries {
		at, sl := r.since(d.at), &rep.slots[d.slot]
		if at < r.killed {
			inBefore[d.slot] = true
		}
		if at >= r.promote && (sl.firstIn == never || at-r.promote < sl.firstIn) {
			sl.firstIn = at - r.promote
		}
	}
	for i := range rep.slots {
		rep.slots[i].preKill = okBefore[i] && inBefore[i]
	}
	rep.groups = r.groups(rep)
	return rep
}

// groups returns the slot groups by master, with their delivery rates
// before the kill, during the outage and after the promotion.
func (r *failoverRun) groups(rep *runReport) []groupReport {
	byMaster := map[string]*groupReport{}
	var order []string
	for i, m := range r.d.slotMaster {
		g := byMaster[m]
		if g == nil {
			g = &groupReport{master: m, killed: m == r.d.victim}
			byMaster[m] = g
			order = append(order, m)
		}
		g.slots = append(g.slots, i)
	}
	slices.Sort(order)
	preLen, outLen, afterLen := r.killed-preKillFrom, r.promote-r.killed, r.stopped-r.promote
	var out []groupReport
	for _, m := range order {
		g := byMaster[m]
		var pre, outage, after int
		for _, d := range rep.deliveries {
			if !slices.Contains(g.slots, d.slot) {
				continue
			}
			switch at := r.since(d.at); {
			case at >= preKillFrom && at < r.killed:
				pre++
			case at >= r.killed && at < r.promote:
				outage++
			case at >= r.promote && at < r.stopped:
				after++
			}
		}
		g.preWindowOK = preLen >= time.Second
		g.outageWindow = outLen
		if preLen > 0 {
			g.pre = float64(pre) / preLen.Seconds()
		}
		if outLen > 0 {
			g.outage = float64(outage) / outLen.Seconds()
		}
		g.afterWindow = afterLen
		if afterLen > 0 {
			g.after = float64(after) / afterLen.Seconds()
		}
		out = append(out, *g)
	}
	return out
}

var (
	addrPattern   = regexp.MustCompile(`\d+\.\d+\.\d+\.\d+:\d+`)
	slotPattern   = regexp.MustCompile(`\bslot \d+`)
	numberPattern = regexp.MustCompile(`\b\d{4,}\b`)
)

// errKind names the kind of a failed Send: its text with addresses, slots
// and long numbers blanked out.
func errKind(err error) string {
	s := addrPattern.ReplaceAllString(err.Error(), "ADDR")
	s = slotPattern.ReplaceAllString(s, "slot N")
	s = numberPattern.ReplaceAllString(s, "N")
	var tags []string
	if errors.Is(err, rmq.ErrNotReplicated) {
		tags = append(tags, "ErrNotReplicated")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		tags = append(tags, "DeadlineExceeded")
	}
	if len(s) > 140 {
		s = s[:140] + "…"
	}
	if len(tags) > 0 {
		s = "[" + strings.Join(tags, ",") + "] " + s
	}
	return s
}

// seqOf returns the number of message content "m:<n>".
func seqOf(content string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(content, "m:"))
	return n, err == nil
}

// cpuSteal returns the CPU time stolen by the hypervisor so far (jiffies;
// 0 where /proc/stat cannot be read).
func cpuSteal() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	n, _ := strconv.ParseInt(f[8], 10, 64)
	return n
}
