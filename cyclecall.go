package rmq

import (
	"context"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/wait"
)

// softWait is how long a thread waits for a pop on a Redis Cluster before it
// leaves the call running and serves its other slots meanwhile. A pop takes
// a few milliseconds; one that takes longer is usually stuck on a dead or
// frozen master (go-redis dials it again several times before it gives up),
// and the slots on healthy masters must not wait for it.
const softWait = 50 * time.Millisecond

// popCall is one pop of a slot (a cycle that settles its outcomes and takes
// a batch) and what its continuation needs.
type popCall struct {
	s        *slotState
	req      *rdb.CycleRequest
	sent     time.Time
	admitted int
	probe    bool

	res      rdb.CycleResult
	err      error
	recv     time.Time     // when the reply arrived
	counted  bool          // err is a failure of its group already counted (popgroup.go)
	done     chan struct{} // closed once res and err are set (shared by a group)
	detached bool          // the thread stopped waiting (guarded by thread.mu)
}

// pop runs the cycles of calls (one slot's, or a group's on one node:
// popgroup.go). On a single node it waits for them (every slot shares the
// node, so nothing could be served meanwhile); on a Cluster it runs them in
// a goroutine and waits at most softWait. It reports whether they finished;
// if not, their slots are busy until they do, and the thread continues each
// from its inbox (finishPops).
func (t *thread) pop(hard context.Context, calls []*popCall) bool {
	if !t.sub.c.multiNode {
		t.runPops(hard, calls)
		return true
	}
	done := make(chan struct{})
	for _, c := range calls {
		c.done = done
	}
	go func() {
		t.runPops(hard, calls)
		t.mu.Lock()
		close(done)
		detached := calls[0].detached
		if detached {
			t.finished = append(t.finished, calls...)
		}
		t.mu.Unlock()
		if detached {
			t.poke()
		}
	}()
	if t.soft == nil {
		t.soft = time.NewTimer(softWait)
	} else {
		t.soft.Reset(softWait)
	}
	select {
	case <-done:
		t.soft.Stop()
		return true
	case <-t.soft.C:
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-done:
		return true
	default:
	}
	for _, c := range calls {
		c.detached = true
		c.s.busy = c
	}
	return false
}

// afterPops continues the pops of calls, once back, whose slots the thread
// still serves.
func (t *thread) afterPops(hard context.Context, calls []*popCall) {
	for _, c := range calls {
		if t.slots[c.s.lease.Slot()] == c.s {
			t.afterPop(hard, c)
		}
	}
}

// finishPops continues the pops that finished after the thread stopped
// waiting for them.
func (t *thread) finishPops(hard context.Context, calls []*popCall) {
	for _, c := range calls {
		if c.s.busy != c {
			continue // already awaited by a release
		}
		c.s.busy = nil
		if t.slots[c.s.lease.Slot()] == c.s {
			t.afterPop(hard, c)
			t.wokenMeanwhile(c)
		}
	}
}

// wokenMeanwhile applies the wake-ups that came for a slot while its pop c
// ran: the pop may have looked before their messages were stored, so they
// count after its result, which may have parked the slot. After a failed
// pop the slot's backoff from its node decides when it looks again.
func (t *thread) wokenMeanwhile(c *popCall) {
	s := c.s
	at := s.wokeBusy
	s.wokeBusy = time.Time{}
	if at.IsZero() || c.err != nil || t.slots[s.lease.Slot()] != s || s.busy != nil {
		return
	}
	if s.parked || at.Before(s.next) {
		t.wokenFor(s, at, time.Now())
	}
}

// awaitPop waits for a slot's pop still running, at most flushWait, and
// restores what it took: the slot is being let go, so its messages go back
// unstarted.
//
// A declined slot's pop is not waited for at all, nor one that flushWait
// ends: it is stuck in a partition or on a frozen master (go-redis retries
// a call there for seconds, while the thread's other slots would wait), and
// what it took could not be restored there anyway. It finishes on its own
// and its result is dropped (finishPops); what it took is delivered again
// after the consume timeout, and should it reach Redis after the slot's next
// owner, the slot's fence refuses it, as any late call of an earlier owner.
func (t *thread) awaitPop(s *slotState) {
	c := s.busy
	if c == nil {
		return
	}
	why := ""
	if t.sub.c.declines.Has(t.sub.topic.Name, s.lease.Slot()) {
		why = "the slot's master out of reach"
	} else {
		bound, cancel := context.WithTimeout(context.Background(), flushWait)
		if _, back := wait.Or(c.done, bound.Done()); !back {
			why = "the slot's master not answering"
		}
		cancel()
	}
	if why != "" {
		s.busy = nil
		t.sub.c.cfg.logger.Warn("rmq: a pop left running at the slot's release, "+why+"; what it took will be redelivered after the consume timeout",
			"topic", t.sub.topic.Name, "slot", s.lease.Slot())
		return
	}
	s.busy = nil
	if c.err != nil || c.res.Refused {
		return // nothing was settled or taken
	}
	s.pending = s.pending[:0]
	t.sub.topic.metrics.shard(t.index).recordRestored(int64(len(c.res.Deliveries)))
	for i := range c.res.Deliveries {
		s.pending = append(s.pending, c.res.Deliveries[i].Settle(rdb.Restore))
	}
}
