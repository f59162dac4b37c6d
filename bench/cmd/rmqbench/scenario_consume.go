package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	adjust "github.com/adjust/rmq/v5"
	"github.com/hibiken/asynq"
)

// Consume: a backlog of n messages drained by a no-op listener through each
// system's full at-least-once path (pop → listener → commit/ack), timed from
// the consumer's start until every message is acknowledged in Redis.

const (
	consumeSlots = 64

	vConsumeRMQ    = "RMQ"
	vConsumeRMQDef = "RMQ, default batch size"
	vConsumeRMQOne = "RMQ, one priority"
	vConsumeAsynq  = "asynq"
	vConsumeAdjust = "adjust/rmq"
)

var consumeScenario = &scenario{
	key: "consume",
	variants: func(cfg *config) []variant {
		vs := []variant{
			{"rmq", vConsumeRMQ, func(ctx context.Context, e *env) (metrics, error) {
				return rmqDrain(ctx, e, consumeSlots, e.rmqThreads, e.rmqBatch)
			}},
			{"rmq", vConsumeRMQOne, func(ctx context.Context, e *env) (metrics, error) {
				return rmqDrainPriorities(ctx, e, consumeSlots, e.rmqThreads, e.rmqBatch, onePriority)
			}},
			{"bare", vConsumeFloor, consumeFloor(spreadPriority)},
			{"bare", vConsumeFloorOne, consumeFloor(onePriority)},
			{"asynq", vConsumeAsynq, consumeAsynq},
			{"adjust", vConsumeAdjust, consumeAdjust},
		}
		if cfg.rmqBatch > 0 { // show what the untuned library does too
			vs = append(vs, variant{"rmq", vConsumeRMQDef, func(ctx context.Context, e *env) (metrics, error) {
				return rmqDrain(ctx, e, consumeSlots, e.rmqThreads, 0)
			}})
		}
		return vs
	},
	report: reportConsume,
}

// consumePriorities says which priorities the drain of variant name sends.
func consumePriorities(name string) string {
	if name == vConsumeRMQOne || name == vConsumeFloorOne {
		return "every message priority 500"
	}
	return "priorities 17..1016"
}

func consumeSettings(e *config, name string) string {
	switch name {
	case vConsumeRMQ, vConsumeRMQDef, vConsumeRMQOne:
		batch := "default batch size (256)"
		if e.rmqBatch > 0 && name != vConsumeRMQDef {
			batch = fmt.Sprintf("WithBatchSize(%d)", e.rmqBatch)
		}
		return fmt.Sprintf("Priority topic, %d slots, WithThreads(%d), %s, %s", consumeSlots, e.rmqThreads, batch, consumePriorities(name))
	case vConsumeFloor, vConsumeFloorOne:
		return fmt.Sprintf("one script call per batch and key: commit the last batch, pop %d into prepare; "+
			"%d connections, 64 keys, %s", floorBatch(e), max(e.rmqThreads, 1), consumePriorities(name))
	case vConsumeAsynq:
		return fmt.Sprintf("Concurrency %d, one queue, handler returns nil (task deleted on success)", e.asynqConc)
	case vConsumeAdjust:
		return fmt.Sprintf("StartConsuming(prefetch %d, poll %s), %d consumers, Ack per delivery", e.adjustPrefetch, e.adjustPoll, e.adjustWorkers)
	}
	return ""
}

func consumeAsynq(ctx context.Context, e *env) (metrics, error) {
	r := newRedis(e.addr)
	defer r.Close()
	c := asynq.NewClientFromRedisClient(r)
	defer c.Close()
	if err := asynqEnqueueAll(ctx, c, payloads(e.n, "c"), 32, nil); err != nil {
		return nil, err
	}
	var calls atomic.Int64
	done := make(chan struct{})
	handler := asynq.HandlerFunc(func(context.Context, *asynq.Task) error {
		if calls.Add(1) == int64(e.n) {
			close(done)
		}
		return nil
	})
	srv := newAsynqServer(r, asynq.Config{Concurrency: e.asynqConc})
	m := metrics{}
	meter := startMeter(ctx, e)
	if err := srv.Start(handler); err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, fmt.Errorf("asynq handled %d of %d: %w", calls.Load(), e.n, ctx.Err())
	}
	if err := asynqWaitDrained(ctx, r); err != nil {
		return nil, err
	}
	return m, meter.stop(ctx, e.n, m)
}

func consumeAdjust(ctx context.Context, e *env) (metrics, error) {
	s, err := openAdjust(e)
	if err != nil {
		return nil, err
	}
	if err := s.fill(payloads(e.n, "c")); err != nil {
		return nil, errors.Join(err, s.close())
	}
	var calls, ackErrs atomic.Int64
	done := make(chan struct{})
	consume := func(d adjust.Delivery) {
		if err := d.Ack(); err != nil {
			ackErrs.Add(1)
			return
		}
		if calls.Add(1) == int64(e.n) {
			close(done)
		}
	}
	m := metrics{}
	meter := startMeter(ctx, e)
	if err := s.queue.StartConsuming(e.adjustPrefetch, e.adjustPoll); err != nil {
		return nil, errors.Join(err, s.close())
	}
	for range e.adjustWorkers {
		if _, err := s.queue.AddConsumerFunc("bench", consume); err != nil {
			return nil, errors.Join(err, s.close())
		}
	}
	select {
	case <-done:
		err = meter.stop(ctx, e.n, m)
	case <-ctx.Done():
		err = fmt.Errorf("adjust/rmq acked %d of %d (%d ack errors): %w", calls.Load(), e.n, ackErrs.Load(), ctx.Err())
	}
	return m, errors.Join(err, s.close())
}

// reportThroughputRatios writes the per-round ratio table of each RMQ
// variant against each peer present and returns the ratio of the first RMQ
// variant to the best peer per round (nil if it or every peer is missing).
func reportThroughputRatios(rep *report, res *scenarioResults, rmqNames, peers []string) []float64 {
	rate := func(name string) []float64 { return res.perRound(name, mRate) }
	var present [][]float64
	for _, p := range peers {
		if res.has(p) {
			present = append(present, rate(p))
		}
	}
	if len(present) == 0 {
		return nil
	}
	rt := newTable(roundHead("Ratio", res.rounds)...)
	var first []float64
	for k, r := range rmqNames {
		if !res.has(r) {
			continue
		}
		for _, p := range peers {
			if res.has(p) {
				rt.add(append([]string{r + " ÷ " + p}, perRoundCells(ratios(rate(r), rate(p)), ratio)...)...)
			}
		}
		best := ratios(rate(r), bestOf(present...))
		rt.add(append([]string{"**" + r + " ÷ best peer**"}, perRoundCells(best, ratio)...)...)
		if k == 0 {
			first = best
		}
	}
	if len(rt.rows) > 0 {
		rep.printf("Per-round ratios of throughput (higher favours RMQ):\n\n")
		rt.write(rep.w)
	}
	return first
}

func reportConsume(rep *report, res *scenarioResults) {
	rep.printf("## 2. Consume\n\n")
	rep.printf("A backlog of n messages drained by a no-op listener through each system's full at-least-once path " +
		"(pop → listener → commit/ack), timed from the consumer's start until Redis holds no pending or in-flight " +
		"message (RMQ: Stats shows store and prepare empty; asynq: no pending or active task; adjust/rmq: the " +
		"last Ack returned). Filling the backlog is not timed. Redis busy = the server's CPU time over the wall time.\n\n")
	t := newTable("System", "settings", "msgs/s", "Redis busy", "client CPU /100k msgs", "Redis CPU /100k msgs")
	for _, name := range res.order {
		row := []string{name, consumeSettings(rep.cfg, name), stat(res.values(name, mRate), num), stat(res.values(name, mRedisBusy), pct)}
		t.add(append(row, cpuCells(res, name)...)...)
	}
	t.write(rep.w)
	if best := reportThroughputRatios(rep, res, []string{vConsumeRMQ, vConsumeRMQDef}, []string{vConsumeAsynq, vConsumeAdjust}); best != nil {
		v := median(best)
		rep.target("Consume (64 slots)", "≥ 3× the best peer", ratio(v), verdict(v, func(x float64) bool { return x >= 3 }))
	}
	floors := map[string]string{vConsumeRMQ: vConsumeFloor, vConsumeRMQOne: vConsumeFloorOne}
	for _, name := range []string{vConsumeRMQ, vConsumeRMQOne} {
		if res.has(name) {
			v := median(res.values(name, mRedisCPU)) // CPU seconds per 100k messages
			measured := usPerMsg(v)
			if f := floors[name]; res.has(f) {
				measured += " (two-phase floor " + usPerMsg(median(res.values(f, mRedisCPU))) + ")"
			}
			rep.target("Redis CPU per consumed message: "+name, "≤ 4 µs", measured,
				verdict(v*10, func(us float64) bool { return us <= 4 }))
		}
	}
	reportFloor(rep, res)
}

// reportFloor writes, per round, RMQ's Redis CPU per consumed message beside
// the two-phase floor's for the same priorities, when both ran.
func reportFloor(rep *report, res *scenarioResults) {
	pairs := [][2]string{{vConsumeRMQ, vConsumeFloor}, {vConsumeRMQOne, vConsumeFloorOne}}
	t := newTable(roundHead("Redis CPU per message", res.rounds)...)
	for _, p := range pairs {
		if !res.has(p[0]) || !res.has(p[1]) {
			continue
		}
		for _, name := range p {
			t.add(append([]string{name}, perRoundCells(res.perRound(name, mRedisCPU), usPerMsg)...)...)
		}
		t.add(append([]string{p[0] + " − " + p[1]}, perRoundCells(diffs(res.perRound(p[0], mRedisCPU),
			res.perRound(p[1], mRedisCPU)), usPerMsg)...)...)
	}
	if len(t.rows) == 0 {
		return
	}
	rep.printf("\nRedis CPU per consumed message, RMQ beside the two-phase floor of the same priorities, per round " +
		"(the floor: one script call per batch and key that commits the key's last batch by its prepare score and " +
		"pops the next into prepare with its scores, and nothing else; what RMQ spends above it goes to its clock, " +
		"fencing, timeouts, retries, the check of what a commit removes and the guard against a lost reply):\n\n")
	t.write(rep.w)
}

// diffs returns a[i] − b[i], NaN where either is missing.
func diffs(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = math.NaN()
		if i < len(b) {
			out[i] = a[i] - b[i]
		}
	}
	return out
}
