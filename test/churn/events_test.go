package churn_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/churn"
)

// --- events ------------------------------------------------------------------

// event records an event that happened at (a time.Now taken just before the
// action) and waits until pause after it, watching the coordinator meanwhile
// for the moment every slot is held by its assigned owner among live.
func (r *churnRun) event(at time.Time, name string, live []string, pause time.Duration, opts ...func(*churnEvent)) *churnEvent {
	ev := &churnEvent{Event: churn.Event{Name: name, At: at.UnixNano()}, live: live}
	for _, o := range opts {
		o(ev)
	}
	r.events = append(r.events, ev)
	r.t.Logf("%7.3fs  %s", r.since(ev.At), name)
	r.watch(ev, time.Unix(0, ev.At).Add(pause))
	return ev
}

// watch polls the coordinator until the assignment settles on ev.live or until.
func (r *churnRun) watch(ev *churnEvent, until time.Time) {
	for time.Now().Before(until) {
		if ev.viewSettled == 0 && r.viewSettledAvoiding(ev.live, ev.avoid, ev.avoided) {
			ev.viewSettled = time.Now().UnixNano()
		}
		r.checkAlive()
		time.Sleep(min(200*time.Millisecond, time.Until(until)))
	}
}

// checkAlive fails the test if a worker the parent did not end has exited,
// or if the feed failed.
func (r *churnRun) checkAlive() {
	r.feed.mu.Lock()
	err := r.feed.err
	r.feed.mu.Unlock()
	if err != nil {
		r.t.Fatalf("feed: %v", err)
	}
	for _, w := range r.workers {
		if w.fate == "" && w.Exited() {
			r.t.Fatalf("worker %s exited on its own: %v\n%s", w.id, w.Err(), w.Output())
		}
	}
}

// viewSettled reports whether the coordinator shows every slot assigned to
// one of live and held by its assigned owner, and every live worker assigned
// slots.
func (r *churnRun) viewSettled(live []string) bool { return r.viewSettledAvoiding(live, "", nil) }

// viewSettledAvoiding is viewSettled where worker avoid must also be
// assigned none of the slots in avoided.
func (r *churnRun) viewSettledAvoiding(live []string, avoid string, avoided map[int]bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	slots, err := r.obs.slots(ctx, r.ns, churnTopic)
	if err != nil || len(slots) != churnSlots {
		return false
	}
	seen := map[string]bool{}
	for _, s := range slots {
		if s.Assigned.Worker == "" || s.Holder != s.Assigned || !slices.Contains(live, s.Assigned.Worker) ||
			avoided[s.Slot] && s.Assigned.Worker == avoid {
			return false
		}
		seen[s.Assigned.Worker] = true
	}
	return len(seen) == len(live)
}

func (r *churnRun) since(ns int64) float64 { return time.Duration(ns - r.t0.UnixNano()).Seconds() }

// begin starts the first workers and waits until the coordinator shows the
// assignment settled.
func (r *churnRun) begin(ids ...string) {
	at := time.Now().UnixNano()
	for _, id := range ids {
		r.startWorker(id)
	}
	ev := &churnEvent{Event: churn.Event{Name: "start " + strings.Join(ids, ","), At: at}, live: ids}
	r.events = append(r.events, ev)
	r.t.Logf("%7.3fs  %s", r.since(at), ev.Name)
	deadline := time.Now().Add(churnSettleBound)
	for !r.viewSettled(ids) {
		r.checkAlive()
		if time.Now().After(deadline) {
			r.t.Fatalf("the assignment did not settle on %v within %v", ids, churnSettleBound)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ev.viewSettled = time.Now().UnixNano()
	time.Sleep(time.Second) // let every slot be served a few times
}

func (r *churnRun) join(id string, pause time.Duration) {
	at := time.Now()
	r.startWorker(id)
	r.event(at, "join "+id, r.live(), pause, func(e *churnEvent) { e.joined = id })
}

func (r *churnRun) stop(id string, pause time.Duration) {
	w := r.worker(id)
	note := r.midCall(w, "stop", churnSlowSleep)
	at := time.Now()
	r.signal(w, syscall.SIGTERM)
	w.fate = "SIGTERM"
	r.event(at, "stop "+id+" (SIGTERM)", r.live(), pause, withNote(note))
}

func (r *churnRun) kill(id string, pause time.Duration) {
	w := r.worker(id)
	note := r.midCall(w, "kill", churnSlowSleep)
	at := time.Now()
	r.signal(w, syscall.SIGKILL)
	w.fate = "SIGKILL"
	<-w.Done()
	r.event(at, "kill "+id+" (SIGKILL)", r.live(), pause, withNote(note))
}

func (r *churnRun) freeze(id string, pause time.Duration) {
	w := r.worker(id)
	note := r.midCall(w, "freeze", churnSlowSleep)
	at := time.Now()
	r.signal(w, syscall.SIGSTOP)
	r.event(at, "freeze "+id+" (SIGSTOP)", r.live(id), pause, withNote(note))
}

func withNote(note string) func(*churnEvent) { return func(e *churnEvent) { e.note = note } }

// midCall sends a slow message to a slot that worker w holds and waits until
// its listener runs, so that the signal that follows lands mid-call. It
// returns a note for the report.
func (r *churnRun) midCall(w *churnWorker, tag string, d time.Duration) string {
	return r.midCallOn(w, tag, d, nil)
}

// midCallOn is midCall on a slot for which want is true (nil: any).
func (r *churnRun) midCallOn(w *churnWorker, tag string, d time.Duration, want func(slot int) bool) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	slots, err := r.obs.slots(ctx, r.ns, churnTopic)
	if err != nil {
		return fmt.Sprintf("no mid-call message: assignment: %v", err)
	}
	slot := -1
	for _, s := range slots {
		if s.Holder.Worker == w.id && s.Assigned.Worker == w.id && (want == nil || want(s.Slot)) {
			slot = s.Slot
			break
		}
	}
	key := ""
	for _, k := range r.keys {
		if slot >= 0 && rmq.SlotIndex([]byte(k), churnSlots) == slot {
			key = k
			break
		}
	}
	if key == "" {
		return fmt.Sprintf("no mid-call message: %s holds no slot", w.id)
	}
	content := fmt.Sprintf("%s%s%s-%d", key, churnSlowTag, tag, d.Milliseconds())
	if err := r.sendDue(ctx, func(now time.Time) error {
		return r.client.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: churnTopic, Content: []byte(content),
			FixedTime: now.Add(churnDue), SlotBasis: key})
	}); err != nil {
		r.t.Fatalf("send %s: %v", content, err)
	}
	r.feed.mu.Lock()
	r.feed.sent = append(r.feed.sent, content)
	r.feed.mu.Unlock()
	r.slow = append(r.slow, content)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(w.logPath); err == nil && strings.Contains(string(b), `"`+content+`"`) {
			time.Sleep(100 * time.Millisecond) // well inside the call
			return fmt.Sprintf("mid-call: %s in the listener (slot %d)", content, slot)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Sprintf("NOT mid-call: %s (slot %d) did not start within 5s", content, slot)
}

func (r *churnRun) thaw(id string, pause time.Duration) {
	at := time.Now()
	r.signal(r.worker(id), syscall.SIGCONT)
	r.event(at, "thaw "+id+" (SIGCONT)", r.live(), pause)
}
