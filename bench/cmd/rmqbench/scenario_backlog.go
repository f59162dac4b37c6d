package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rmq-go/rmq"
)

// Backlog: the consume scenario's drain with a deep backlog. A 64-slot
// Priority topic is filled with 100k, 1M and 10M messages (SendBatch, not
// timed); then the consumer's start until a fixed sample (default 300k, or
// the whole backlog when smaller) is committed is timed. Redis used_memory
// before and after the fill gives bytes per queued message.

const (
	mConsumed    = "consumed"
	mListenRate  = "listen_msgs_per_s" // the sample over Start → its last listener call
	mFillSeconds = "fill_s"
)

func backlogName(size int) string { return "backlog " + thousands(int64(size)) }

var backlogScenario = &scenario{
	key: "backlog",
	variants: func(cfg *config) []variant {
		var vs []variant
		for _, size := range cfg.backlogSizes {
			vs = append(vs, variant{"rmq", backlogName(size), func(ctx context.Context, e *env) (metrics, error) {
				return backlogRMQ(ctx, e, size)
			}}, variant{"bare", bareBacklogName(size), func(ctx context.Context, e *env) (metrics, error) {
				return backlogBare(ctx, e, size)
			}}, variant{"bare", floorBacklogName(size), func(ctx context.Context, e *env) (metrics, error) {
				return backlogFloor(ctx, e, size)
			}})
		}
		return vs
	},
	report: reportBacklog,
}

func backlogRMQ(ctx context.Context, e *env, size int) (metrics, error) {
	var opts []rmq.Option
	if e.rmqBatch > 0 {
		opts = append(opts, rmq.WithBatchSize(e.rmqBatch))
	}
	s, err := openRMQ(e, nil, opts...)
	if err != nil {
		return nil, err
	}
	const topic = "backlog"
	fail := func(err error) (metrics, error) { return nil, errors.Join(err, s.close()) }
	if err := s.define(ctx, topic, consumeSlots, rmq.Priority); err != nil {
		return fail(err)
	}
	mem0, err := settledMemory(ctx, e.admin)
	if err != nil {
		return fail(err)
	}
	fillStart := time.Now()
	if err := fillBacklog(ctx, s, topic, size); err != nil {
		return fail(err)
	}
	fill := time.Since(fillStart)
	mem1, err := settledMemory(ctx, e.admin)
	if err != nil {
		return fail(err)
	}
	sample := min(size, e.backlogSample)
	l := newCountingListener(sample)
	if err := s.c.Subscribe(topic, l, rmq.WithThreads(e.rmqThreads)); err != nil {
		return fail(err)
	}
	m := metrics{mBytesPerMsg: float64(mem1-mem0) / float64(size), mFillSeconds: fill.Seconds()}
	meter := startMeter(ctx, e)
	s.start()
	select {
	case <-l.done:
	case <-ctx.Done():
		return fail(fmt.Errorf("consumed %d of %d: %w", l.calls.Load(), sample, ctx.Err()))
	}
	m[mListenRate] = float64(sample) / time.Since(meter.start).Seconds()
	consumed, err := waitCommitted(ctx, s, topic, size, sample)
	if err == nil {
		err = meter.stop(ctx, int(consumed), m)
	}
	m[mConsumed] = float64(consumed)
	return m, errors.Join(err, s.close())
}

// waitCommitted polls Stats until at least sample of the size messages
// stored on topic are committed (no longer in store, retry, prepare or
// dead), and returns how many are.
func waitCommitted(ctx context.Context, s *rmqSystem, topic string, size, sample int) (int64, error) {
	for {
		st, err := s.c.Stats(ctx, topic)
		if err != nil {
			return 0, err
		}
		if st.Dead > 0 {
			return 0, fmt.Errorf("rmq: %d dead messages", st.Dead)
		}
		if done := int64(size) - st.Store - st.Retry - st.Prepare; done >= int64(sample) {
			return done, nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("waiting for %d commits (store %d, prepare %d): %w", sample, st.Store, st.Prepare, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
