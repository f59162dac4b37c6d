package rmq

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// Idle slots. A slot whose cycle found nothing that will ever fall due (an
// empty store, retry and prepare) is parked: no timer of its own, no Redis
// call, until a producer's wake-up names it, or the thread's idle sweep
// finds something waiting in one of its parked slots. The sweep asks Redis
// about all of the thread's parked slots at once (Broker.AnyWaiting: one
// EXISTS per few hundred slots on a single node, one per slot on a Cluster)
// and unparks them all if any holds a message. It is the safety net for a
// lost wake-up; wake-ups and due times stay the way messages are found on
// time. It runs every idle poll on a single node and every 20th on a Cluster
// (WithIdleSweep), where each parked slot costs a command per sweep: with
// the default poll of 3s, 0.37 commands/s per parked slot there if every
// poll swept, against the 0.05 an idle slot should cost at most.

// parkedUntil is the next look of a parked slot: never, by itself.
var parkedUntil = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// park parks s until a wake-up or the sweep. The first sweep after a time
// without parked slots comes at a random moment within the sweep interval,
// so that the threads of a process that parked their slots together (at its
// start) sweep at moments spread over the interval from the first, not
// together.
func (t *thread) park(s *slotState, now time.Time) {
	s.parked, s.next = true, parkedUntil
	if t.sweepAt.IsZero() {
		t.sweepAt = now.Add(time.Duration(rand.Int64N(int64(t.nextSweep(now).Sub(now)) + 1)))
	}
}

// nextSweep is when the sweep after one at now runs: the sweep interval,
// minus up to a fifth of it (so that threads do not sweep in step).
func (t *thread) nextSweep(now time.Time) time.Time {
	every := t.sub.c.cfg.sweepInterval(t.sub.c.multiNode)
	return now.Add(every - time.Duration(rand.Int64N(int64(every)/5+1)))
}

// sweepDue reports whether the idle sweep is due at now.
func (t *thread) sweepDue(now time.Time) bool {
	return !t.sweepAt.IsZero() && !now.Before(t.sweepAt)
}

// sweep asks Redis whether any parked slot holds a message, and if so
// unparks them all: their cycles then find which. On a single node the
// thread waits for the answer (one call per 300 slots); on a Cluster the
// question goes to every master the parked slots live on, one of which may
// be dead or frozen, so it runs in a goroutine of its own (one at a time per
// thread) and the thread hears the answer from its inbox (unparkSwept).
func (t *thread) sweep(ctx context.Context, now time.Time) {
	var parked []*slotState
	var keys []rdb.SlotKeys
	for _, s := range t.order {
		if s.parked && s.busy == nil {
			parked = append(parked, s)
			keys = append(keys, *s.keys)
		}
	}
	if len(parked) == 0 {
		t.sweepAt = time.Time{}
		return
	}
	t.sweepAt = t.nextSweep(now)
	if !t.sub.c.multiNode {
		if t.askSwept(ctx, keys) {
			t.unpark(parked, now)
		}
		return
	}
	if t.sweeping {
		return // the last sweep is still out
	}
	t.sweeping = true
	t.sub.c.background.Go(func() { // Start waits for it, as for every background goroutine
		waiting := t.askSwept(ctx, keys)
		t.mu.Lock()
		t.swept = &sweepAnswer{parked: parked, waiting: waiting}
		t.mu.Unlock()
		t.poke()
	})
}

// sweepAnswer is what a sweep of a Cluster's slots found.
type sweepAnswer struct {
	parked  []*slotState
	waiting bool
}

// askSwept asks Redis whether any of keys' slots holds a message; a failure
// is logged (unless ctx ended: the shutdown began) and counts as no.
func (t *thread) askSwept(ctx context.Context, keys []rdb.SlotKeys) bool {
	g := &t.sub.c.consumers
	if !g.enter() {
		return false
	}
	waiting, err := t.sub.c.broker.AnyWaiting(ctx, keys)
	g.leave()
	if err != nil && ctx.Err() != nil {
		return false
	}
	if err != nil {
		t.sub.c.counters.redisErrors.Add(1)
		if n := t.sweepFails.Add(1); n == 1 || n%30 == 0 {
			t.sub.c.cfg.logger.Warn("rmq: idle sweep failed; trying again at the next", "topic", t.sub.topic.Name,
				"slots", len(keys), "failures", n, "err", err)
		}
		return false
	}
	if n := t.sweepFails.Swap(0); n > 0 {
		t.sub.c.cfg.logger.Info("rmq: idle sweep works again", "topic", t.sub.topic.Name, "failures", n)
	}
	return waiting
}

// unparkSwept applies the answer of a sweep that ran in a goroutine.
func (t *thread) unparkSwept(a *sweepAnswer) {
	t.sweeping = false
	if a.waiting {
		t.unpark(a.parked, time.Now())
	}
}

// unpark makes the slots of a sweep that found messages look at once (those
// still parked and still the thread's).
func (t *thread) unpark(slots []*slotState, now time.Time) {
	for _, s := range slots {
		if s.parked && t.slots[s.lease.Slot()] == s {
			s.parked, s.next = false, now
		}
	}
}
