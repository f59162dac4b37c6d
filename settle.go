package rmq

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/wait"
)

// flush sends a slot's pending outcomes once. On a Cluster it waits at most
// flushWait: a master cut off from this process would hold the call for
// go-redis's timeouts and retries (seconds; go-redis's reads heed a ctx's
// deadline only with ContextTimeoutEnabled), and with it the thread's slots
// on the other masters. A call not back by then is left running, its result
// dropped, and the slot's next flush fails at once until it is back.
// Outcomes not sent go with the slot's next cycle, as after any failure (a
// settle applies once however often it is sent).
func (t *thread) flush(hard context.Context, s *slotState) error {
	if len(s.pending) == 0 {
		return nil
	}
	if !t.sub.c.multiNode {
		return t.flushed(s, t.cycleErr(hard, s, t.request(s, 0)))
	}
	if s.flushing != nil {
		select {
		case <-s.flushing:
			s.flushing = nil
		default:
			return errUnanswered // the last one is still out
		}
	}
	ctx, cancel := context.WithTimeout(hard, flushWait)
	defer cancel()
	done, req := make(chan error, 1), t.request(s, 0)
	go func() { done <- t.cycleErr(ctx, s, req) }()
	if err, back := wait.Or(done, ctx.Done()); back {
		return t.flushed(s, err)
	}
	if err := hard.Err(); err != nil {
		return err
	}
	// The call still reads s.pending's array: the slot goes on with a copy.
	s.flushing, s.pending = done, slices.Clone(s.pending)
	return errUnanswered
}

// cycleErr is cycle for a call whose result only counts by its error: a
// refused one (another owner's record) fails with errFenced.
func (t *thread) cycleErr(ctx context.Context, s *slotState, req *rdb.CycleRequest) error {
	res, err := t.cycle(ctx, s, req)
	if err == nil && res.Refused {
		return errFenced
	}
	return err
}

// errFenced is the outcome of a flush that the slot's owner record refused:
// nothing of it was settled.
var errFenced = errors.New("rmq: the slot is held by another owner")

// flushed ends a flush that came back with err. A refused one settled
// nothing: the slot is let go as after a refused pop (fencedOut).
func (t *thread) flushed(s *slotState, err error) error {
	switch {
	case err == nil:
		s.pending, s.lingering = s.pending[:0], false
	case errors.Is(err, errFenced) && !s.fenced:
		t.fencedOut(s, "")
	}
	return err
}

// errUnanswered marks a flush that flushWait ended: the slot's master did
// not answer in time.
var errUnanswered = errors.New("rmq: the slot's master did not answer within " + flushWait.String())

// flushWait bounds a flush on a Cluster (flush). A flush takes a few
// milliseconds; the bound leaves room for a loaded machine's pauses.
const flushWait = 500 * time.Millisecond

// settle sends a slot's pending outcomes, retrying Redis failures for a while.
// Outcomes that cannot be sent stay in prepare and time out: their messages
// are delivered again (duplicates, never a loss).
//
// A slot declined for its master being out of reach is not tried at all,
// and a slot whose master let a flush go unanswered is not tried again:
// five unanswered flushes with their backoffs would hold the thread's other
// slots about 3 s. Failures that come back as answers (a failover's
// refusals) are retried.
func (t *thread) settle(hard context.Context, s *slotState) {
	if len(s.pending) > 0 && t.sub.c.declines.Has(t.sub.topic.Name, s.lease.Slot()) {
		t.sub.c.cfg.logger.Warn("rmq: outcomes not settled, the slot's master out of reach; their messages will be redelivered after the consume timeout",
			"topic", t.sub.topic.Name, "slot", s.lease.Slot(), "messages", len(s.pending))
		return
	}
	for attempt := 1; len(s.pending) > 0; attempt++ {
		err := t.flush(hard, s)
		if err == nil {
			return
		}
		if errors.Is(err, errFenced) {
			continue // its restores go again, unfenced, at once
		}
		if !errors.Is(err, ErrClosed) && hard.Err() == nil {
			t.sub.c.counters.redisErrors.Add(1) // a failed call, then a backoff (Metrics.RedisErrors)
		}
		if attempt == 5 || hard.Err() != nil || errors.Is(err, errUnanswered) {
			// A warning like every other effect of an unreachable Redis: the
			// messages are delivered again, not lost.
			t.sub.c.cfg.logger.Warn("rmq: outcomes not settled; their messages will be redelivered after the consume timeout",
				"topic", t.sub.topic.Name, "slot", s.lease.Slot(), "messages", len(s.pending), "err", err)
			return
		}
		wait.Sleep(hard, backoff.Redis.Delay(attempt))
	}
}
