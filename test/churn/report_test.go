package churn_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/churn"
)

func (r *churnRun) analyse(sent []string, l churn.Log, feedEnd, stoppedAt int64) {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Calls are about messages that were sent, in the slot of their key.
	if u := churn.Unexpected(sent, l.Calls); len(u) > 0 {
		t.Errorf("%d contents in the logs were never sent, e.g. %q", len(u), u[:min(len(u), 10)])
	}
	wrongSlot := 0
	for _, c := range l.Calls {
		if key, _, _ := strings.Cut(c.Content, "|"); key != c.Key || rmq.SlotIndex([]byte(key), churnSlots) != c.Slot {
			if wrongSlot++; wrongSlot <= 5 {
				t.Errorf("call in the wrong slot: %+v", c)
			}
		}
	}

	// Exclusivity: no two owned calls of one slot overlap.
	overlaps := churn.Overlaps(l.Calls)
	for i, o := range overlaps {
		if i == 20 {
			t.Errorf("... %d more overlaps", len(overlaps)-20)
			break
		}
		t.Errorf("EXCLUSIVITY VIOLATED: %s", o)
	}

	// No loss.
	missing := churn.Missing(sent, l.Calls)
	if len(missing) > 0 {
		t.Errorf("%d of %d sent messages were never processed (no owned call), e.g. %q",
			len(missing), len(sent), missing[:min(len(missing), 20)])
		if st, err := r.client.Stats(ctx, churnTopic); err == nil {
			t.Errorf("stats: store %d, retry %d, prepare %d, dead %d; non-empty slots: %s",
				st.Store, st.Retry, st.Prepare, st.Dead, nonEmptySlots(st))
		}
	}

	// The topic ends empty.
	st, err := r.client.Stats(ctx, churnTopic)
	if err != nil {
		t.Errorf("stats: %v", err)
	} else if st.Store != 0 || st.Retry != 0 || st.Prepare != 0 || st.Dead != 0 {
		t.Errorf("at the end: store %d, retry %d, prepare %d, dead %d; want all 0 (slots %s)",
			st.Store, st.Retry, st.Prepare, st.Dead, nonEmptySlots(st))
	}

	// Workers: graceful stops exit 0, kills by SIGKILL; nothing bad in the output.
	for _, w := range r.workers {
		switch w.fate {
		case "SIGKILL":
			if !w.KilledBySIGKILL() {
				t.Errorf("worker %s ended with %v, not by our SIGKILL", w.id, w.Err())
			}
		default:
			if err := w.Err(); err != nil {
				t.Errorf("worker %s exited with %v after %s", w.id, err, w.fate)
			}
		}
		for _, bad := range w.OutputProblems() {
			t.Errorf("worker %s output has %q", w.id, bad)
		}
	}

	// Every worker the coordinator should have used served slots; a thawed
	// worker got slots again after SIGCONT, a cut-off one after the heal.
	counts := churn.Count(l.Calls)
	for _, w := range r.workers {
		if counts.PerWorker[w.id].Processed == 0 {
			t.Errorf("worker %s processed nothing", w.id)
		}
	}
	for _, ev := range r.events {
		id, ok := strings.CutPrefix(ev.Name, "thaw ")
		if !ok {
			id, ok = strings.CutPrefix(ev.Name, "heal ")
		}
		if ok {
			id, _, _ = strings.Cut(id, " ")
			n := 0
			for _, c := range l.Calls {
				if c.Worker == id && c.Owned && c.Start > ev.At {
					n++
				}
			}
			if n == 0 {
				t.Errorf("worker %s never served a slot again after %s", id, ev.Name)
			}
		}
	}

	// Every worker left the coordinator (the killed one's session expired).
	deadline := time.Now().Add(churnSession + 5*time.Second)
	for {
		ws, err := r.obs.workers(ctx, r.ns)
		if err == nil && len(ws) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("workers still registered in the %s coordinator after all stopped: %v (%v)", r.kind.name, ws, err)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}

	r.report(sent, l, counts, len(overlaps), feedEnd, stoppedAt)
}

func nonEmptySlots(st rmq.Stats) string {
	var parts []string
	for _, s := range st.Slots {
		if s.Store != 0 || s.Prepare != 0 || s.Dead != 0 {
			parts = append(parts, fmt.Sprintf("%d:s%d/p%d/d%d", s.Slot, s.Store, s.Prepare, s.Dead))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// report prints the summary table of the run.
func (r *churnRun) report(sent []string, l churn.Log, counts churn.Counts, overlaps int, feedEnd, stoppedAt int64) {
	var b strings.Builder
	fmt.Fprintf(&b, "churn %s: %s coordinator, %d workers × %d threads, topic of %d slots, %d keys, %d msg/s, session %v, consume timeout %v, lookahead %v\n",
		r.t.Name(), r.kind.name, len(r.workers), churnThreads, churnSlots, churnKeys, churnRate, churnSession, churnConsumeTimeout, r.lookahead)
	fmt.Fprintf(&b, "resolution: the feed sends each slot a message at least every %v (a slot's keys recur every %d messages at %d msg/s, sent in batches every %v), so the times below may be late by up to ~%v\n",
		r.resStep, int(r.resStep.Seconds()*churnRate+0.5), churnRate, churnTick, r.resStep+churnTick)
	b.WriteString("all-served: until every slot had an owned call starting after the event; settled: until every slot was served by its final owner of the window; coord-view: until the coordinator showed every slot held by its assigned live owner\n")

	// Join events are measured from the joined worker's start marker.
	for _, ev := range r.events {
		if ev.joined != "" {
			if at := l.Mark(ev.joined, churn.MarkStart); at > 0 {
				ev.note = fmt.Sprintf("process start took %.3fs", time.Duration(at-ev.At).Seconds())
				ev.At = at
			}
		}
	}
	rows := [][]string{{"event", "at", "window", "moved", "all-served", "settled", "coord-view", "target", "note"}}
	for i, ev := range r.events {
		end := feedEnd
		if i+1 < len(r.events) {
			end = r.events[i+1].At
		}
		m := churn.Measure(l.Calls, churnSlots, ev.Event, end)
		view := "not in window"
		if ev.viewSettled > 0 {
			view = churn.FormatDuration(time.Duration(ev.viewSettled - ev.At))
		}
		note := ev.note
		if len(m.Unserved) > 0 {
			note = strings.TrimPrefix(note+fmt.Sprintf("; UNSERVED slots %v", m.Unserved), "; ")
		} else {
			note = strings.TrimPrefix(note+fmt.Sprintf("; last slot %d/%d", m.LastSlot, m.SettledSlot), "; ")
		}
		rows = append(rows, []string{ev.Name, fmt.Sprintf("%.3fs", r.since(ev.At)),
			fmt.Sprintf("%.1fs", time.Duration(end-ev.At).Seconds()), strconv.Itoa(m.Moved),
			churn.FormatDuration(m.AllServed), churn.FormatDuration(m.Settled), view, target(r.kind, ev.Name, m.Settled), note})
	}
	b.WriteString(churn.Table(rows))

	fmt.Fprintf(&b, "sent %d; calls %d; processed %d (distinct %d); duplicates %d; not-owner calls %d; overlaps %d; torn log lines %d; drain+stop %.3fs after the feed\n",
		len(sent), counts.Calls, counts.Processed, counts.Distinct, counts.Duplicates, counts.NotOwned, overlaps, l.Torn,
		time.Duration(stoppedAt-feedEnd).Seconds())
	wrows := [][]string{{"worker", "fate", "exit", "calls", "processed", "not-owner", "warnings"}}
	for _, w := range r.workers {
		c := counts.PerWorker[w.id]
		fate := w.fate
		if fate == "" {
			fate = "-"
		}
		wrows = append(wrows, []string{w.id, fate, w.ExitStatus(), strconv.Itoa(c.Calls), strconv.Itoa(c.Processed),
			strconv.Itoa(c.NotOwned), warnings(w.Output())})
	}
	b.WriteString(churn.Table(wrows))
	if len(r.events) > 0 {
		gaps := churn.Gaps(l.Calls, churnSlots, r.events[0].At, feedEnd)
		b.WriteString("longest times a slot had no owned call starting:")
		for _, g := range gaps[:min(len(gaps), 5)] {
			fmt.Fprintf(&b, " slot %d %.3fs (%.3fs→%.3fs);", g.Slot, g.Len().Seconds(), r.since(g.From), r.since(g.To))
		}
		b.WriteString("\n")
	}
	for _, content := range r.slow {
		var calls []string
		for _, c := range l.Calls {
			if c.Content == content {
				calls = append(calls, fmt.Sprintf("%s %.3fs→%.3fs owned=%v", c.Worker, r.since(c.Start), r.since(c.End), c.Owned))
			}
		}
		flag := ""
		for _, c := range l.Calls {
			if c.Content == content && !c.Owned && strings.Contains(content, churnSlowTag+"stop-") {
				// Not a safety problem (the slot stays ours until we release
				// it), but the drain was meant to let the call finish as owner.
				flag = " ← the graceful stop's drain lost ownership before the call in hand ended"
			}
		}
		fmt.Fprintf(&b, "mid-call message %s: calls %s%s\n", content, strings.Join(calls, "; "), flag)
	}
	summary := b.String()
	r.t.Log("\n" + summary)
	_ = os.WriteFile(filepath.Join(r.dir, "summary.txt"), []byte(summary), 0o644)
}

// churnDeclineGoal is how soon a worker cut off from one data master alone
// should have given its slots there up: 3 s unanswered, up to 1 s between
// probes, the leader's grace of 2 s, and a second for the handover.
const churnDeclineGoal = 7 * time.Second

// target compares a settle time with the kind's goal for the event (not an
// assertion): its graceful goal after a join, a thaw or a heal (the worker
// rejoins), that plus the slow listener the stopped worker had in hand after
// a graceful stop (when the kind counts it apart), and the session or lease
// timeout plus its crash margin after a crash, a freeze or a partition of a
// worker; after a worker's partition from one data master, the time to
// decline its slots (churnDeclineGoal).
func target(kind coordinatorKind, event string, settled time.Duration) string {
	var goal time.Duration
	switch {
	case strings.Contains(event, "cut off from the master of"):
		goal = churnDeclineGoal
	case strings.HasPrefix(event, "join "), strings.HasPrefix(event, "thaw "), strings.HasPrefix(event, "heal "):
		goal = kind.graceful
	case strings.HasPrefix(event, "stop "):
		goal = kind.graceful + kind.inHand
	case strings.HasPrefix(event, "kill w"), strings.HasPrefix(event, "freeze "), strings.HasPrefix(event, "partition "):
		goal = churnSession + kind.crashMargin
	default:
		return "-"
	}
	verdict := "ok"
	if settled < 0 || settled > goal {
		verdict = "OVER"
	}
	return fmt.Sprintf("≤%v %s", goal, verdict)
}

// warnings counts a worker's WARN log lines by message.
func warnings(out string) string {
	counts := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "level=WARN") {
			continue
		}
		msg := line
		if i := strings.Index(line, "msg="); i >= 0 {
			msg = line[i+4:]
			if strings.HasPrefix(msg, `"`) {
				if j := strings.Index(msg[1:], `"`); j >= 0 {
					msg = msg[1 : j+1]
				}
			} else if j := strings.IndexByte(msg, ' '); j >= 0 {
				msg = msg[:j]
			}
		}
		counts[msg]++
	}
	if len(counts) == 0 {
		return "-"
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d× %s", counts[m], strings.TrimPrefix(m, "rmq: ")))
	}
	return strings.Join(parts, "; ")
}
