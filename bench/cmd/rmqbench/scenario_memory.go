package main

import (
	"context"
	"errors"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"github.com/rmq-go/rmq"
)

// Memory: Redis used_memory grown by a backlog of n messages, per message.

const (
	vMemRMQ    = "RMQ"
	vMemAsynq  = "asynq"
	vMemAdjust = "adjust/rmq"
	vMemBare   = "bare ZADD (yardstick)"
)

var memoryScenario = &scenario{
	key: "memory",
	variants: func(*config) []variant {
		return []variant{
			{"rmq", vMemRMQ, memoryRMQ},
			{"asynq", vMemAsynq, memoryAsynq},
			{"adjust", vMemAdjust, memoryAdjust},
			{"bare", vMemBare, memoryBare},
		}
	},
	report: reportMemory,
}

func memorySettings(name string) string {
	switch name {
	case vMemRMQ:
		return "Priority topic, 64 slots (store sorted sets, member = content)"
	case vMemAsynq:
		return "Enqueue: a hash per task (protobuf message) + the pending list"
	case vMemAdjust:
		return "PublishBytes: one list entry per message"
	case vMemBare:
		return "the same members and scores, ZADD into 64 keys"
	}
	return ""
}

// memoryDelta measures used_memory before and after fill and stores bytes per message.
func memoryDelta(ctx context.Context, e *env, fill func() error) (metrics, error) {
	before, err := settledMemory(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	if err := fill(); err != nil {
		return nil, err
	}
	after, err := settledMemory(ctx, e.admin)
	if err != nil {
		return nil, err
	}
	return metrics{mBytesPerMsg: float64(after-before) / float64(e.n)}, nil
}

// settledMemory reads used_memory after a short pause, so that replies and
// client buffers of the last commands have been released.
func settledMemory(ctx context.Context, r *redis.Client) (int64, error) {
	time.Sleep(200 * time.Millisecond)
	return usedMemory(ctx, r)
}

func memoryRMQ(ctx context.Context, e *env) (metrics, error) {
	s, err := openRMQ(e, nil)
	if err != nil {
		return nil, err
	}
	const topic = "memory"
	if err := s.define(ctx, topic, consumeSlots, rmq.Priority); err != nil {
		return nil, errors.Join(err, s.close())
	}
	pl := payloads(e.n, "m")
	m, err := memoryDelta(ctx, e, func() error { return s.fillPriority(ctx, topic, pl) })
	return m, errors.Join(err, s.close())
}

func memoryAsynq(ctx context.Context, e *env) (metrics, error) {
	r := newRedis(e.addr)
	defer r.Close()
	c := asynq.NewClientFromRedisClient(r)
	defer c.Close()
	pl := payloads(e.n, "m")
	return memoryDelta(ctx, e, func() error { return asynqEnqueueAll(ctx, c, pl, 32, nil) })
}

func memoryAdjust(ctx context.Context, e *env) (metrics, error) {
	s, err := openAdjust(e)
	if err != nil {
		return nil, err
	}
	pl := payloads(e.n, "m")
	m, err := memoryDelta(ctx, e, func() error { return s.fill(pl) })
	return m, errors.Join(err, s.close())
}

func memoryBare(ctx context.Context, e *env) (metrics, error) {
	r := newRedis(e.addr)
	defer r.Close()
	pl := payloads(e.n, "m")
	return memoryDelta(ctx, e, func() error { return bareZAdd(ctx, r, pl, 1000) })
}

func reportMemory(rep *report, res *scenarioResults) {
	rep.printf("## 4. Memory\n\n")
	rep.printf("Redis `used_memory` after − before storing a backlog of n messages (64-byte payloads, not consumed), " +
		"divided by n. Nothing else runs meanwhile.\n\n")
	t := newTable("System", "layout", "bytes per message", "RMQ ÷ system")
	rmqVals := res.perRound(vMemRMQ, mBytesPerMsg)
	for _, name := range res.order {
		r := "—"
		if res.has(vMemRMQ) && name != vMemRMQ {
			r = ratio(median(ratios(rmqVals, res.perRound(name, mBytesPerMsg))))
		}
		t.add(name, memorySettings(name), stat(res.values(name, mBytesPerMsg), num), r)
	}
	t.write(rep.w)
	if res.has(vMemRMQ) && res.has(vMemBare) {
		rt := newTable(roundHead("Ratio", res.rounds)...)
		vsBare := ratios(rmqVals, res.perRound(vMemBare, mBytesPerMsg))
		rt.add(append([]string{"RMQ ÷ bare ZADD"}, perRoundCells(vsBare, ratio)...)...)
		rep.printf("Per-round ratio (lower favours RMQ):\n\n")
		rt.write(rep.w)
		v := median(vsBare)
		rep.target("Memory per queued message", "≤ 1.15× bare ZADD", ratio(v), verdict(v, func(x float64) bool { return x <= 1.15 }))
	}
}
