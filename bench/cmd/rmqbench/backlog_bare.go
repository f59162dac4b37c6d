package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The deep backlog's floor: what a deeper sorted set costs Redis itself.
// The same backlog (members payload("b", i), the scores RMQ's Priority
// messages get, spread over the bare yardstick's 64 keys by CRC32) is filled
// with pipelined ZADDs, not timed; then the same sample is taken out with
// ZPOPMAX of the consume batch size from as many connections as the
// consumer has threads, and nothing else: no prepare set, no script, no
// listener. How much more Redis CPU a message costs at depth here is the
// part of the growth no consumer of a sorted set escapes.

const bareBacklogPrefix = "bare ZPOPMAX, "

func bareBacklogName(size int) string { return bareBacklogPrefix + backlogName(size) }

func isBareBacklog(name string) bool { return strings.HasPrefix(name, bareBacklogPrefix) }

func backlogBare(ctx context.Context, e *env, size int) (metrics, error) {
	r := newRedis(e.addr)
	defer r.Close()
	mem0, err := settledMemory(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	fillStart := time.Now()
	if err := fillBare(ctx, r, size, "b", spreadPriority); err != nil {
		return nil, err
	}
	fill := time.Since(fillStart)
	mem1, err := settledMemory(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	sample := min(size, e.backlogSample)
	m := metrics{mBytesPerMsg: float64(mem1-mem0) / float64(size), mFillSeconds: fill.Seconds()}
	meter := startMeter(ctx, e)
	popped, err := popBare(ctx, r, sample, max(e.rmqThreads, 1), max(e.rmqBatch, 1))
	if err != nil {
		return nil, err
	}
	m[mListenRate] = float64(popped) / time.Since(meter.start).Seconds()
	m[mConsumed] = float64(popped)
	return m, meter.stop(ctx, int(popped), m)
}

// fillBare stores n members payload(tag, i) at score prio(i) in the bare
// keys with pipelines of backlogChunk ZADDs from backlogFillers goroutines,
// building each pipeline when it is sent.
func fillBare(ctx context.Context, r *redis.Client, n int, tag string, prio func(int) int64) error {
	chunks := (n + backlogChunk - 1) / backlogChunk
	return parallel(chunks, backlogFillers, func(c int) error {
		pipe := r.Pipeline()
		for i := c * backlogChunk; i < min((c+1)*backlogChunk, n); i++ {
			p := payload(tag, i)
			pipe.ZAdd(ctx, bareKey(p), redis.Z{Score: float64(prio(i)), Member: p})
		}
		_, err := pipe.Exec(ctx)
		return err
	})
}

// popBare takes at least sample members out of the bare keys with ZPOPMAX of
// batch, from conns goroutines (goroutine w pops the keys w, w+conns, …
// round-robin), and returns how many it took.
func popBare(ctx context.Context, r *redis.Client, sample, conns, batch int) (int64, error) {
	var popped atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, conns)
	for w := range conns {
		wg.Go(func() {
			empty := 0 // keys found empty in a row
			for k := w; popped.Load() < int64(sample) && empty*conns < bareSlots; k = (k + conns) % bareSlots {
				got, err := r.ZPopMax(ctx, bareKeyOf(k), int64(batch)).Result()
				if err != nil {
					errs[w] = err
					return
				}
				if len(got) == 0 {
					empty++
					continue
				}
				empty = 0
				popped.Add(int64(len(got)))
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	return popped.Load(), nil
}
