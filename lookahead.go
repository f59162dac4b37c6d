package rmq

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// MaxLookahead bounds WithLookahead.
const MaxLookahead = 10 * time.Second

// WithLookahead lets each pop of a FixedTime or RangeMerge topic also take
// the messages due within d after Redis's now; the slot's thread keeps them
// and hands each to the listener at its due time, by the Redis clock (never
// early: the thread counts from when the pop's reply arrived). Punctual
// traffic at low rates then costs a Redis call per d and slot instead of one
// per message, and a thread's slots share the round trip: a pop takes along
// the thread's slots (on a Cluster, those of the same master) due for a look
// within d/4. The commits of the messages delivered meanwhile go with the
// slot's next call, at most d (or 250 ms, if more) later, and never more than
// a second or a tenth of the consume timeout. A slot looks again a twentieth
// of d (at most 10 ms) before its next message falls due, so that the message
// is held and handed over on time rather than arriving with a reply.
//
// What changes for messages due within d: they are in flight (prepare) from
// the pop on, so Producer.Cancel no longer finds them, a RangeMerge copy sent
// meanwhile is delivered again after them instead of merging, and their
// consume timeout counts from their due second. A crash repeats them after
// the consume timeout (duplicates, never a loss), and a slot that moves,
// pauses or is shut down hands them back unstarted. While a rate limit is
// set, pops take only messages due now. Default 0 (off); at most
// MaxLookahead, in whole milliseconds. Subscribe fails with ErrInvalidOption
// on a Priority topic.
func WithLookahead(d time.Duration) SubscribeOption {
	return func(c *subConfig) {
		if d < 0 || d > MaxLookahead || d%time.Millisecond != 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: lookahead %v outside 0..%v in whole ms", ErrInvalidOption, d, MaxLookahead))
			return
		}
		c.lookahead = d
	}
}

// heldMsg is a message popped ahead of its due time, kept by its slot's
// thread until then.
type heldMsg struct {
	d rdb.Delivery
	// at is the local time the due time is reached at the latest: the reply
	// arrived after Redis read its clock.
	at time.Time
	// base is the local time the due time is reached at the earliest (the
	// call was sent before Redis read its clock): no prepare entry of the
	// message times out before base + the consume timeout.
	base  time.Time
	nowMs int64 // Redis time of the pop, ms
}

// ahead returns how far ahead s's next pop may reach: the subscription's
// lookahead, unless a rate limit is set (it admits messages as they are
// popped) or the pop is a breaker's probe.
func (t *thread) ahead(probe bool) time.Duration {
	if t.sub.lookahead == 0 || probe || t.sub.flow.limiter.limited() {
		return 0
	}
	return t.sub.lookahead
}

// hold adds a pop's deliveries to s.held in due order (a message due now at
// recv, behind those held that fell due earlier). sent and recv are when the
// pop was sent and its reply arrived.
func (t *thread) hold(s *slotState, res rdb.CycleResult, sent, recv time.Time) {
	if len(res.Deliveries) == 0 {
		return
	}
	for i := range res.Deliveries {
		d := &res.Deliveries[i]
		ahead := time.Duration(0)
		if d.DueMs > 0 {
			ahead = max(time.Duration(d.DueMs*1000-res.NowUs)*time.Microsecond, 0)
		}
		s.held = append(s.held, heldMsg{d: *d, at: recv.Add(ahead), base: sent.Add(ahead), nowMs: res.NowMs})
	}
	slices.SortStableFunc(s.held, func(a, b heldMsg) int { return a.at.Compare(b.at) })
}

// heldDue reports whether s holds a message whose due time has come.
func (s *slotState) heldDue(now time.Time) bool {
	return len(s.held) > 0 && !s.held[0].at.After(now)
}

// deliverHeld hands the held messages that are due to the listener, as one
// batch whose deadlines count from the first one's due time, and reports
// whether it delivered any.
func (t *thread) deliverHeld(hard context.Context, s *slotState, now time.Time) bool {
	n := 0
	for n < len(s.held) && !s.held[n].at.After(now) {
		n++
	}
	if n == 0 {
		return false
	}
	batch := rdb.CycleResult{NowMs: s.held[0].nowMs, Deliveries: make([]rdb.Delivery, n)}
	for i := range n {
		batch.Deliveries[i] = s.held[i].d
	}
	base := s.held[0].base
	s.held = append(s.held[:0], s.held[n:]...)
	t.deliver(hard, s, batch, base)
	return true
}

// afterAheadPop continues a pop that reached ahead (WithLookahead): it holds
// what was popped, delivers what is due, and says when to look again.
func (t *thread) afterAheadPop(hard context.Context, s *slotState, res rdb.CycleResult, sent, recv time.Time) {
	full := res.NextMs >= 0 && res.NextMs*1000 <= res.NowUs // the batch came back full
	t.hold(s, res, sent, recv)
	t.deliverHeld(hard, s, recv)
	now := time.Now()
	s.lingering = false
	switch {
	case full && (len(s.held) == 0 || !s.held[len(s.held)-1].at.After(now)):
		s.next = now // more may be due
	case full:
		// The pop reached messages not yet due, so nothing more is due now
		// (pops go in due order): look again when the last one is.
		s.next = s.held[len(s.held)-1].at
	case res.NextMs < 0 && len(s.held) == 0 && len(s.pending) == 0:
		t.park(s, now)
		return
	default:
		s.next = t.aheadLook(res, recv) // the pop's clock, not the listeners' end
	}
	s.next, s.lingering = t.lingerHeld(s, now)
}

// aheadLook is nextLook after a pop that reached ahead. A due time further
// off than twice popEarly is looked at popEarly before it: a message due then
// is within the next pop's reach, so it is held and handed over at its due
// time instead of arriving with a pop's reply, a round trip late. A nearer
// one (a retry, which no pop takes early) is looked at on time.
func (t *thread) aheadLook(res rdb.CycleResult, now time.Time) time.Time {
	next := t.nextLook(res, now)
	if early := t.popEarly(); next.Sub(now) > 2*early {
		return next.Add(-early)
	}
	return next
}

// popEarly is how long before the next due time a slot that reaches ahead
// pops: a twentieth of the lookahead, at most 10 ms.
func (t *thread) popEarly() time.Duration {
	return min(t.sub.lookahead/20, 10*time.Millisecond)
}

// lingerHeld returns when to look at s again now that it delivered messages,
// and whether its pending outcomes may wait until then: commits wait for the
// slot's next call, at most the lookahead linger; anything else goes at once,
// and so do commits while a copy of a held message waits in store, due
// (heldBack): the commit of the one delivered may be what it waits for.
func (t *thread) lingerHeld(s *slotState, now time.Time) (time.Time, bool) {
	if len(s.pending) == 0 {
		return s.next, s.lingering
	}
	if s.heldBack {
		return time.Time{}, false
	}
	for _, o := range s.pending {
		if o.Action() != rdb.Commit {
			return time.Time{}, false
		}
	}
	return minTime(s.next, now.Add(t.aheadLinger())), true
}

// aheadLingerMax bounds how long commits wait for a slot's next call under a
// lookahead: a slot with nothing more due that soon settles them in a call of
// their own, at most one a second.
const aheadLingerMax = time.Second

// aheadLinger is how long commits may wait for a slot's next call under a
// lookahead: the lookahead, at most aheadLingerMax and a tenth of the consume
// timeout.
func (t *thread) aheadLinger() time.Duration {
	return min(max(t.sub.lookahead, commitLinger), aheadLingerMax, t.sub.c.cfg.consumeTimeout/10)
}

// restoreHeld hands s's held messages back unstarted with its pending
// outcomes (the slot is being let go, or its topic paused or its breaker
// open). A half-open breaker's probe is never among them (its pop reaches
// no further than now: ahead), so the probe in flight, if any, is left be.
func (t *thread) restoreHeld(s *slotState) {
	if len(s.held) == 0 {
		return
	}
	t.sub.topic.metrics.shard(t.index).recordRestored(int64(len(s.held)))
	for i := range s.held {
		s.pending = append(s.pending, s.held[i].d.Settle(rdb.Restore))
	}
	s.held = s.held[:0]
	s.lingering = false
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
