package rmq

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/alarm"
	"github.com/rmq-go/rmq/internal/rdb"
)

// thread is one consuming goroutine of a subscription. It holds the slots the
// coordinator leased to it and serves them one message at a time, taking due
// slots round-robin. Between batches it sleeps until the earliest time one of
// its slots needs a look: a due time learnt from the last pop, a wake-up from
// a producer, or the idle poll.
type thread struct {
	sub   *subscription
	index int

	// The inbox, filled by the coordinator's handler and the wake listener.
	mu       sync.Mutex
	added    []*coordinator.Lease
	revoked  bool
	wakes    map[int]int64 // slot → earliest announced due time, Unix ms
	finished []*popCall    // pops that finished after the thread stopped waiting
	swept    *sweepAnswer  // the answer of a sweep that ran in a goroutine
	alarm    *alarm.Alarm  // the thread's sleep; Wake: "look at the inbox"

	// Owned by the thread's goroutine.
	slots    map[int]*slotState
	order    []*slotState // round-robin order
	rr       int
	down     map[string]*nodeBackoff // nodes whose calls failed lately, by Broker.Node
	soft     *time.Timer             // a pop's soft wait (cyclecall.go)
	sweepAt  time.Time               // the next idle sweep; zero while no slot is parked
	sweeping bool                    // a sweep runs in a goroutine (idleslots.go)
	// sweepFails counts the idle sweeps failed in a row (askSwept), whose
	// warnings are the first and every 30th.
	sweepFails atomic.Int64
}

// slotState is one leased slot of a thread.
type slotState struct {
	lease   *coordinator.Lease
	keys    *rdb.SlotKeys   // the topic's, shared (topicInfo.slots)
	ctx     context.Context // listeners' context, from the first delivery on (listenCtx)
	stop    func()          // ends ctx
	next    time.Time       // when to cycle next; zero means at once
	pending []rdb.Outcome
	// lingering: pending holds only commits, sent with the cycle due at next
	// (see afterDelivery).
	lingering bool
	busy      *popCall // a pop still running after the thread stopped waiting
	// flushing: a flush left running (flush); it has its result once it can
	// be received from.
	flushing <-chan error
	// wokeBusy: the earliest due time of the wake-ups that came while busy,
	// for after the pop (finishPops); zero if none came.
	wokeBusy time.Time
	parked   bool // empty: looked at again on a wake-up or after the idle sweep (idleslots.go)
	// skew: how far its master's clock runs ahead of this process's, in µs,
	// as its last pop read it (clockSkew); known once a pop read it.
	skew      int64
	skewKnown bool
	held      []heldMsg // popped ahead of their due time, in due order (lookahead.go)
	// heldBack: the last pop left a due copy of a held message in store
	// (rdb.CycleResult.HeldBack), so held commits do not linger (lingerHeld).
	heldBack bool
	moving   int // pops refused in a row while its hash slot moves (nodebackoff.go)
	// fenced: a cycle was refused, another owner holding the slot; pending
	// holds restores alone from then on, sent without the fence (request).
	fenced bool
	// givenBack: until then the slot pops nothing, its listener having
	// returned ErrNotOwner while it was owned (deliver.go, gaveBack).
	givenBack time.Time
}

func newThread(s *subscription, index int) *thread {
	return &thread{sub: s, index: index, alarm: alarm.New(), slots: make(map[int]*slotState)}
}

// poke makes the thread look at its inbox.
func (t *thread) poke() { t.alarm.Wake() }

// assign queues a new lease for the thread.
func (t *thread) assign(l *coordinator.Lease) {
	t.mu.Lock()
	t.added = append(t.added, l)
	t.mu.Unlock()
	t.poke()
}

// revoke tells the thread one of its leases is being revoked.
func (t *thread) revoke() {
	t.mu.Lock()
	t.revoked = true
	t.mu.Unlock()
	t.poke()
}

// run serves slots until quit is closed; then it releases what it still holds.
// Its idle sweeps run within sweeps, which ends when the shutdown begins:
// their answers no longer matter then, and a shutdown does not wait for
// go-redis's retries of a sweep to a master out of reach.
func (t *thread) run(hard, sweeps context.Context, quit <-chan struct{}) {
	defer t.alarm.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-quit:
			t.poke()
		case <-done:
		}
	}()
	var last *slotState // the slot served last, whose outcomes may still be pending
	for {
		t.absorb(hard)
		select {
		case <-quit:
			for _, s := range append([]*slotState(nil), t.order...) {
				t.release(hard, s)
			}
			return
		default:
		}
		if now := time.Now(); t.sweepDue(now) {
			t.sweep(sweeps, now)
		}
		s, wait := t.pick(time.Now())
		if last != nil && last != s && len(last.pending) > 0 && !last.lingering && last.busy == nil &&
			t.slots[last.lease.Slot()] == last {
			// Moving on: settle now rather than with the slot's next cycle, so
			// prepare shows only work in hand and a crash repeats little
			// (unless the commits linger for a cycle due soon: afterDelivery).
			_ = t.flush(hard, last) // on failure they go with the next cycle
		}
		last = s
		if s == nil {
			t.alarm.Sleep(wait)
			continue
		}
		t.serve(hard, s)
	}
}

// absorb applies the inbox: new leases, revocations, wake-ups.
func (t *thread) absorb(hard context.Context) {
	t.mu.Lock()
	added, revoked, wakes, finished, swept := t.added, t.revoked, t.wakes, t.finished, t.swept
	t.added, t.revoked, t.wakes, t.finished, t.swept = nil, false, nil, nil, nil
	t.mu.Unlock()
	t.finishPops(hard, finished)
	if swept != nil {
		t.unparkSwept(swept)
	}
	for _, l := range added {
		t.add(hard, l)
	}
	if revoked {
		for _, s := range append([]*slotState(nil), t.order...) {
			if s.lease.IsRevoked() {
				t.release(hard, s)
			}
		}
	}
	t.applyWakes(wakes)
}

// add starts serving a new lease.
func (t *thread) add(hard context.Context, l *coordinator.Lease) {
	if old := t.slots[l.Slot()]; old != nil {
		t.release(hard, old) // a newer lease of the same slot replaces it
	}
	s := &slotState{lease: l, keys: &t.sub.topic.slots[l.Slot()]}
	t.slots[l.Slot()] = s
	t.order = append(t.order, s)
	if t.sub.holders[l.Slot()].Swap(t) == nil {
		t.sub.owned.Add(1)
	}
}

// release settles a slot's outcomes and hands the lease back.
func (t *thread) release(hard context.Context, s *slotState) {
	t.awaitPop(s)
	t.restoreHeld(s)
	t.settle(hard, s)
	delete(t.slots, s.lease.Slot())
	for i, o := range t.order {
		if o == s {
			t.order = append(t.order[:i], t.order[i+1:]...)
			break
		}
	}
	if t.sub.holders[s.lease.Slot()].CompareAndSwap(t, nil) {
		t.sub.owned.Add(-1)
	}
	if s.stop != nil {
		s.stop()
	}
	s.lease.Release()
}

// cycle runs one cycle script call on s, unless consumption was abandoned
// (see Client.Shutdown): then it fails with ErrClosed without touching Redis.
func (t *thread) cycle(hard context.Context, s *slotState, req *rdb.CycleRequest) (rdb.CycleResult, error) {
	g := &t.sub.c.consumers
	if !g.enter() {
		return rdb.CycleResult{}, ErrClosed
	}
	defer g.leave()
	return t.sub.c.broker.Cycle(hard, *s.keys, req)
}

// pick returns the next slot to serve (round-robin among those due), or how
// long to wait until one is.
func (t *thread) pick(now time.Time) (*slotState, time.Duration) {
	wait := time.Hour
	if !t.sweepAt.IsZero() {
		wait = max(t.sweepAt.Sub(now), 0)
	}
	for i := range t.order {
		s := t.order[(t.rr+i)%len(t.order)]
		if s.busy != nil {
			continue // served again once its pop is back
		}
		if len(s.held) > 0 {
			if !s.held[0].at.After(now) {
				t.rr = (t.rr + i + 1) % len(t.order)
				return s, 0
			}
			wait = min(wait, s.held[0].at.Sub(now))
		}
		if s.parked {
			continue // served again once it is woken
		}
		if s.next.After(now) {
			wait = min(wait, s.next.Sub(now))
			continue
		}
		if until, held := t.heldBack(s, now); held {
			wait = min(wait, until.Sub(now))
			continue
		}
		t.rr = (t.rr + i + 1) % len(t.order)
		return s, 0
	}
	return nil, wait
}

// request builds a cycle request for s popping up to max messages.
func (t *thread) request(s *slotState, max int) *rdb.CycleRequest {
	c := t.sub.c
	return &rdb.CycleRequest{
		Priority:  t.sub.topic.Type == Priority,
		KeepFirst: t.sub.topic.Type == RangeMerge,
		Max:       max,
		Timeout:   c.cfg.consumeTimeout,
		Fence:     t.fence(s),
		Waits:     c.waits,
		Outcomes:  s.pending,
	}
}

// serve runs one cycle on s: settle its outcomes, pop a batch, deliver it.
func (t *thread) serve(hard context.Context, s *slotState) {
	if s.lease.IsRevoked() {
		t.release(hard, s)
		return
	}
	now := time.Now()
	if s.heldDue(now) && t.sub.flow.limiter.limited() {
		// Popped ahead before a rate limit was set (none reaches ahead
		// under one): back to store, to be popped as the limit admits them.
		t.restoreHeld(s)
	}
	if s.heldDue(now) {
		// A message popped ahead fell due: no Redis call. A look due as well
		// comes at the next pick, behind its node's backoff (pick hands out a
		// slot whose held message is due before it looks at the backoff).
		looking := !s.next.After(now)
		t.deliverHeld(hard, s, now)
		if !looking {
			s.next, s.lingering = t.lingerHeld(s, time.Now())
		}
		return
	}
	if !s.lease.Valid() || now.Before(s.givenBack) {
		// The coordinator cannot vouch for the slot right now (no recent
		// heartbeat), or the listener said it is not ours: pop nothing,
		// settle what is pending, look again soon.
		_ = t.flush(hard, s)
		s.next = maxTime(time.Now().Add(invalidLeaseRecheck), s.givenBack)
		return
	}
	sent := time.Now()
	admitted, probe, until := t.admit(t.sub.batchSize(), sent)
	if admitted == 0 {
		// Held back by the topic's flow control: settle what is pending,
		// with the messages held for their due times if the topic is paused
		// or its breaker open (a rate limit admitted them when popped).
		if t.sub.heldBack() {
			t.restoreHeld(s)
		}
		_ = t.flush(hard, s)
		s.next = until
		return
	}
	call := &popCall{s: s, req: t.request(s, admitted), sent: sent, admitted: admitted, probe: probe}
	call.req.Ahead = t.ahead(probe)
	if calls := t.groupCalls(call); t.pop(hard, calls) {
		t.afterPops(hard, calls)
	}
}

// afterPop continues serve once its pop is back: back off from a failing
// node, let go of a slot another owner holds, or deliver the batch.
func (t *thread) afterPop(hard context.Context, call *popCall) {
	c, s, res, err := t.sub.c, call.s, call.res, call.err
	t.admitted(call.admitted, len(res.Deliveries), call.probe)
	now := call.recv
	if err != nil {
		t.popFailed(call, now)
		return
	}
	if skew, ok := clockSkew(res.NowUs, call.sent, now); ok {
		s.skew, s.skewKnown = skew, true
	}
	if n := t.recovered(s); n > 0 {
		c.cfg.logger.Info("rmq: redis reachable again", "topic", t.sub.topic.Name, "slot", s.lease.Slot(), "failures", n)
	}
	if res.Refused {
		// The refused pop settled nothing. What it carried back unstarted
		// still goes back as it was, with the held messages (release).
		t.fencedOut(s, res.Owner)
		t.release(hard, s)
		return
	}
	s.pending, s.lingering, s.moving, s.heldBack = s.pending[:0], false, 0, res.HeldBack
	if call.req.Ahead > 0 || len(s.held) > 0 {
		t.afterAheadPop(hard, s, res, call.sent, now)
		return
	}
	if len(res.Deliveries) == 0 {
		if res.NextMs < 0 {
			t.park(s, now) // nothing will fall due here by itself
			return
		}
		s.next = t.nextLook(res, now)
		return
	}
	t.deliver(hard, s, res, call.sent)
	// Look again at once (more may be due, and the outcomes go along), or
	// let the commits wait for the slot's next cycle, due soon.
	s.next, s.lingering = t.afterDelivery(s, res, now, time.Now())
}

// invalidLeaseRecheck is how often a slot whose lease is not valid right now
// is looked at again (no Redis call is made for it).
const invalidLeaseRecheck = 50 * time.Millisecond
