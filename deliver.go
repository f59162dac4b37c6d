package rmq

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/wait"
)

// flushEvery bounds how long a finished message's outcome waits in a batch
// before it is sent on its own.
const flushEvery = 100 * time.Millisecond

// deliver hands a popped batch to the listener one message at a time and
// records each outcome in s.pending, sent with the slot's next cycle (or on
// its own when the batch runs long). A message not yet started when the
// lease is revoked or lost, or when the batch has run for half the consume
// timeout, is restored as it was: its original score, no retry spent.
func (t *thread) deliver(hard context.Context, s *slotState, res rdb.CycleResult, popped time.Time) {
	c := t.sub.c
	deadline := popped.Add(c.cfg.consumeTimeout / 2)
	popSecond := res.NowMs / 1000 * 1000
	flushed := popped
	for i, p := range res.Popped {
		if now := time.Now(); len(s.pending) > 0 && now.Sub(flushed) >= flushEvery {
			_ = t.flush(hard, s) // on failure they go with the next cycle
			flushed = now
		}
		if wait.Closed(s.lease.Revoking()) || !s.lease.Valid() || time.Now().After(deadline) {
			c.counters.restored.Add(int64(len(res.Popped) - i))
			for _, q := range res.Popped[i:] {
				s.pending = append(s.pending, rdb.Outcome{Member: q.Member,
					PrepareScore: popSecond + retriesOf(q.Score), Action: rdb.ActionRestore, Arg: q.Score})
			}
			return
		}
		m, err := newMessage(t.sub.topic, s.lease.Slot(), p.Member, p.Score, res.NowMs)
		if err != nil { // a score RMQ did not write; hand the message on anyway
			c.cfg.logger.Error("rmq: unexpected score", "err", err)
			m = &Message{Topic: t.sub.topic.Name, Slot: s.lease.Slot(), Content: p.Member, RetriesLeft: int(retriesOf(p.Score))}
		}
		o := rdb.Outcome{Member: p.Member, PrepareScore: popSecond + int64(m.RetriesLeft), Action: rdb.ActionCommit}
		c.counters.delivered.Add(1)
		if m.Attempt > 1 {
			c.counters.redelivered.Add(1)
		}
		err = t.call(s.ctx, m)
		switch {
		case err == nil:
			c.counters.committed.Add(1)
		case errors.Is(err, ErrNotOwner):
			// Not done, and not the message's fault: back as it was.
			c.counters.notOwner.Add(1)
			o.Action, o.Arg = rdb.ActionRestore, p.Score
			c.cfg.logger.Info("rmq: listener gave the message back: slot no longer owned", "topic", m.Topic, "slot", m.Slot)
		default:
			c.counters.failed.Add(1)
			o.Action, o.Arg = rdb.ActionRollback, "0"
			if m.RetriesLeft > 0 {
				retry := MaxRetries + 1 - m.RetriesLeft
				o.Arg = strconv.FormatInt(c.cfg.backoff(retry).Milliseconds(), 10)
			}
			c.cfg.logger.Warn("rmq: listener failed", "topic", m.Topic, "slot", m.Slot,
				"attempt", m.Attempt, "retries_left", m.RetriesLeft, "err", err)
		}
		s.pending = append(s.pending, o)
	}
}

// retriesOf returns the retries left for a message popped with store score.
func retriesOf(score string) int64 {
	f, err := strconv.ParseFloat(score, 64)
	if err != nil || f > MaxRetries {
		return MaxRetries
	}
	return int64(f)
}

// call runs the listener on m, turning a panic into an error.
func (t *thread) call(ctx context.Context, m *Message) (err error) {
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			t.sub.c.counters.panics.Add(1)
			err = fmt.Errorf("rmq: listener panicked: %v", r)
			t.sub.c.cfg.logger.Error("rmq: listener panicked", "topic", m.Topic, "slot", m.Slot,
				"panic", r, "stack", string(debug.Stack()))
		}
		t.sub.stats.observe(time.Since(start))
	}()
	return t.sub.listener.OnMessage(ctx, m)
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
