package rmq

import (
	"context"
	"time"

	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/wait"
)

// flush sends a slot's pending outcomes once. On a Cluster it waits at most
// flushWait: a master cut off from this process would hold the call for
// go-redis's retries (about 20 s), and with it the thread's slots on the
// other masters; outcomes not sent go with the slot's next cycle, as after
// any failure (a settle applies once however often it is sent).
func (t *thread) flush(hard context.Context, s *slotState) error {
	if len(s.pending) == 0 {
		return nil
	}
	ctx := hard
	if t.sub.c.multiNode {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(hard, flushWait)
		defer cancel()
	}
	_, err := t.cycle(ctx, s, t.request(s, 0))
	if err == nil {
		s.pending, s.lingering = s.pending[:0], false
	}
	return err
}

// flushWait bounds a flush on a Cluster (flush). A flush takes a few
// milliseconds; the bound leaves room for a loaded machine's pauses.
const flushWait = 500 * time.Millisecond

// settle sends a slot's pending outcomes, retrying Redis failures for a while.
// Outcomes that cannot be sent stay in prepare and time out: their messages
// are delivered again (duplicates, never a loss).
//
// A slot declined for its master being out of reach is not tried at all: a
// call into a partition waits out the client's timeouts, five times over,
// while the thread's other slots wait.
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
		if attempt == 5 || hard.Err() != nil {
			// A warning like every other effect of an unreachable Redis: the
			// messages are delivered again, not lost.
			t.sub.c.cfg.logger.Warn("rmq: outcomes not settled; their messages will be redelivered after the consume timeout",
				"topic", t.sub.topic.Name, "slot", s.lease.Slot(), "messages", len(s.pending), "err", err)
			return
		}
		wait.Sleep(hard, backoff.Redis.Delay(attempt))
	}
}
