package rmq

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// flushEvery bounds how long a finished message's outcome waits in a batch
// before it is sent on its own.
const flushEvery = 100 * time.Millisecond

// deliver hands a popped batch to the listener one message at a time and
// records each outcome in s.pending, sent with the slot's next cycle (or on
// its own when the batch runs long). A message not yet started when the
// lease is revoked or lost, when the batch has run for half the consume
// timeout, or when the topic is paused or its breaker opens, is restored as
// it was: its original score, no retry spent.
//
// sent is when the cycle that popped the batch was sent: Redis wrote the
// prepare entries after it, so no entry of the batch can time out before
// sent + the consume timeout, which is the deadline of the listeners' ctx.
func (t *thread) deliver(hard context.Context, s *slotState, res rdb.CycleResult, sent time.Time) {
	c := t.sub.c
	restoreAfter := sent.Add(c.cfg.consumeTimeout / 2)
	ctx := newBatchCtx(s.listenCtx(hard), sent.Add(c.cfg.consumeTimeout))
	defer ctx.end()
	flushed := time.Now()
	tm := t.sub.topic.metrics.shard(t.index)
	gaveBack := false // the listener said the slot is not this worker's
	defer func() {
		if gaveBack {
			t.gaveBack(s)
		}
	}()
	for i := range res.Deliveries {
		d := &res.Deliveries[i]
		now := time.Now()
		if len(s.pending) > 0 && now.Sub(flushed) >= flushEvery {
			_ = t.flush(hard, s) // on failure they go with the next cycle
			now = time.Now()
			flushed = now
		}
		if s.lease.IsRevoked() || !s.lease.Valid() || now.After(restoreAfter) || t.sub.heldBack() || gaveBack {
			tm.recordRestored(int64(len(res.Deliveries) - i))
			for j := range res.Deliveries[i:] {
				s.pending = append(s.pending, res.Deliveries[i+j].Settle(rdb.Restore))
			}
			t.probeEnded()
			return
		}
		m := newMessage(t.sub.topic, s.lease.Slot(), d, res.NowMs)
		start := now
		end, err := t.call(ctx, m, start)
		if b := t.sub.flow.breaker; b != nil && !errors.Is(err, ErrNotOwner) {
			var id uint64
			if err != nil {
				id = messageID(m)
			}
			b.record(end, err != nil, id)
		}
		action, outcome := rdb.Commit, callCommitted
		switch {
		case err == nil:
		case errors.Is(err, ErrNotOwner):
			// Not done, and not the message's fault: back as it was.
			action, outcome, gaveBack = rdb.Restore, callNotOwner, true
			t.probeEnded()
			c.cfg.logger.Info("rmq: listener gave the message back: slot no longer owned", "topic", m.Topic, "slot", m.Slot)
		default:
			action, outcome = rdb.Rollback, callFailed
			c.cfg.logger.Warn("rmq: listener failed", "topic", m.Topic, "slot", m.Slot,
				"attempt", m.Attempt, "retries_left", m.RetriesLeft, "err", err)
		}
		tm.recordCall(m, start, end, outcome)
		s.pending = append(s.pending, d.Settle(action))
	}
}

// givenBackPause is how long a slot pops nothing after its listener
// returned ErrNotOwner while the worker owned it (gaveBack).
const givenBackPause = time.Second

// gaveBack follows a batch whose listener returned ErrNotOwner: the rest of
// the batch went back unstarted. If the worker still owns the slot, the
// listener knows of an owner the coordinator does not (its own fence, or a
// mistake): the slot pops nothing for givenBackPause (serve), so that the
// messages handed back are not delivered again at once, endlessly, and no
// retry is spent on them.
func (t *thread) gaveBack(s *slotState) {
	if s.lease.IsRevoked() || !s.lease.Valid() {
		return
	}
	s.givenBack = time.Now().Add(givenBackPause)
	t.sub.c.cfg.logger.Warn("rmq: listener returned ErrNotOwner while this worker owns the slot; the slot pops nothing for a while",
		"topic", t.sub.topic.Name, "slot", s.lease.Slot(), "pause", givenBackPause)
}

// probeEnded tells a half-open breaker that a message of a batch went back
// without an outcome (unstarted, or given back): if it was the probe, the
// next pop may probe again.
func (t *thread) probeEnded() {
	if b := t.sub.flow.breaker; b != nil {
		b.probeDone()
	}
}

// call runs the listener on m, started at start, turning a panic into an
// error, feeds how long it took to the batch sizing, and returns when it
// ended.
func (t *thread) call(ctx context.Context, m *Message, start time.Time) (end time.Time, err error) {
	defer func() {
		if r := recover(); r != nil {
			t.sub.c.counters.panics.Add(1)
			err = fmt.Errorf("rmq: listener panicked: %v", r)
			t.sub.c.cfg.logger.Error("rmq: listener panicked", "topic", m.Topic, "slot", m.Slot,
				"panic", r, "stack", string(debug.Stack()))
		}
		end = time.Now()
		t.sub.stats.observe(end.Sub(start))
	}()
	return time.Time{}, t.sub.listener.OnMessage(ctx, m)
}

// listenStats tracks how long the listener takes, to size batches.
type listenStats struct {
	avgNs atomic.Int64 // exponentially weighted moving average
}

func (s *listenStats) observe(d time.Duration) {
	old := s.avgNs.Load()
	if old == 0 {
		s.avgNs.Store(int64(d) + 1)
		return
	}
	s.avgNs.Store(old + (int64(d)-old)/8)
}

// batchSize is how many messages one pop takes: as many as the listener
// handles in the batch budget (a quarter of the consume timeout, at most
// 500ms), within 1..the configured batch size.
func (s *subscription) batchSize() int {
	cfg := &s.c.cfg
	avg := s.stats.avgNs.Load()
	if avg <= 0 {
		return 1 // first pop: learn the listener's speed on one message
	}
	budget := min(cfg.consumeTimeout/4, 500*time.Millisecond)
	return int(max(1, min(int64(budget)/avg, int64(cfg.batchSize))))
}

// listenCtx returns the listeners' context of the slot, made at its first
// delivery: it ends with the lease or a hard stop, and carries the lease
// (owned.go). A slot that never delivers never makes one, which matters to a
// process holding tens of thousands of idle slots.
func (s *slotState) listenCtx(hard context.Context) context.Context {
	if s.ctx == nil {
		ctx, cancel := context.WithCancel(context.WithValue(s.lease.Context(), leaseKey{}, s.lease))
		stopHard := context.AfterFunc(hard, cancel)
		s.ctx, s.stop = ctx, func() { stopHard(); cancel() }
	}
	return s.ctx
}
