package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hibiken/asynq"
	"github.com/rmq-go/rmq"
)

// Produce: n messages into an empty Redis, timed from the first send to the
// last acknowledged store. One call per message from 16 goroutines, and in
// batches of 1,000 from one goroutine next to the yardstick: the same members
// as one-member ZADDs in go-redis pipelines of 1,000.

const (
	produceBatch = 1000
	produceSlots = 64

	vRMQSend       = "RMQ Send"
	vRMQSendPipe   = "RMQ Send, WithSendStream(false)"
	vAsynqEnqueue  = "asynq Enqueue"
	vAdjustPublish = "adjust/rmq Publish"
	vRMQSendBatch  = "RMQ SendBatch"
	vBareZAdd      = "pipelined ZADD (yardstick)"
	vAdjustBatch   = "adjust/rmq PublishBytes batch"
)

var produceScenario = &scenario{
	key: "produce",
	variants: func(cfg *config) []variant {
		vs := []variant{
			{"rmq", vRMQSend, produceRMQSend},
			{"rmq", vRMQSendPipe, produceRMQSendPipelined},
			{"asynq", vAsynqEnqueue, produceAsynq},
			{"adjust", vAdjustPublish, produceAdjust},
			{"rmq", vRMQSendBatch, produceRMQBatch},
			{"bare", vBareZAdd, produceBareZAdd},
			{"adjust", vAdjustBatch, produceAdjustBatch},
		}
		g := cfg.produceGoroutines
		vs = append(vs, variant{"bare", fullDuplexName(g), produceFullDuplex(g)})
		for _, c := range inflightSplits(g) {
			vs = append(vs, variant{"bare", inflightName(c, g/c), produceInflight(c, g/c)})
		}
		return vs
	},
	report: reportProduce,
}

// parallel calls f(i) for i in 0..n-1 from workers goroutines; it stops at
// the first error and returns it.
func parallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var failed atomic.Bool
	var errMu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					errMu.Lock()
					if first == nil {
						first = err
					}
					errMu.Unlock()
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// produceRMQ times send on a fresh client with a 64-slot Priority topic and
// checks that every message was stored.
func produceRMQ(ctx context.Context, e *env, send func(ctx context.Context, p *rmq.Producer, msgs []rmq.OutgoingMessage) error, opts ...rmq.Option) (metrics, error) {
	s, err := openRMQ(e, nil, opts...)
	if err != nil {
		return nil, err
	}
	const topic = "produce"
	if err := s.define(ctx, topic, produceSlots, rmq.Priority); err != nil {
		return nil, errors.Join(err, s.close())
	}
	pl := payloads(e.n, "p")
	msgs := make([]rmq.OutgoingMessage, len(pl))
	for i, p := range pl {
		msgs[i] = priorityMessage(topic, p, i)
	}
	m := metrics{}
	meter := startMeter(ctx, e)
	err = send(ctx, s.c.Producer(), msgs)
	if err == nil {
		err = meter.stop(ctx, e.n, m)
	}
	if err == nil {
		var st rmq.Stats
		if st, err = s.c.Stats(ctx, topic); err == nil && st.Store != int64(e.n) {
			err = fmt.Errorf("stored %d of %d messages", st.Store, e.n)
		}
	}
	return m, errors.Join(err, s.close())
}

func produceRMQSend(ctx context.Context, e *env) (metrics, error) {
	return produceRMQ(ctx, e, func(ctx context.Context, p *rmq.Producer, msgs []rmq.OutgoingMessage) error {
		return parallel(len(msgs), e.produceGoroutines, func(i int) error { return p.Send(ctx, msgs[i]) })
	})
}

// produceRMQSendPipelined is Send through go-redis pipelines instead of the
// client's own connection: what hooks-dependent setups and clusters get.
func produceRMQSendPipelined(ctx context.Context, e *env) (metrics, error) {
	return produceRMQ(ctx, e, func(ctx context.Context, p *rmq.Producer, msgs []rmq.OutgoingMessage) error {
		return parallel(len(msgs), e.produceGoroutines, func(i int) error { return p.Send(ctx, msgs[i]) })
	}, rmq.WithSendStream(false))
}

func produceRMQBatch(ctx context.Context, e *env) (metrics, error) {
	return produceRMQ(ctx, e, sendBatches)
}

// sendBatches sends msgs with SendBatch, produceBatch at a time.
func sendBatches(ctx context.Context, p *rmq.Producer, msgs []rmq.OutgoingMessage) error {
	for _, c := range chunks(msgs, produceBatch) {
		if err := p.SendBatch(ctx, c...); err != nil {
			return err
		}
	}
	return nil
}

func produceAsynq(ctx context.Context, e *env) (metrics, error) {
	r := newRedis(e.addr)
	defer r.Close()
	c := asynq.NewClientFromRedisClient(r)
	defer c.Close()
	pl := payloads(e.n, "p")
	m := metrics{}
	meter := startMeter(ctx, e)
	if err := asynqEnqueueAll(ctx, c, pl, e.produceGoroutines, nil); err != nil {
		return nil, err
	}
	return m, meter.stop(ctx, e.n, m)
}

func produceAdjust(ctx context.Context, e *env) (metrics, error) {
	return produceAdjustWith(ctx, e, func(s *adjustSystem, pl [][]byte) error {
		return parallel(len(pl), e.produceGoroutines, func(i int) error { return s.queue.PublishBytes(pl[i]) })
	})
}

func produceAdjustBatch(ctx context.Context, e *env) (metrics, error) {
	return produceAdjustWith(ctx, e, func(s *adjustSystem, pl [][]byte) error { return s.fill(pl) })
}

func produceAdjustWith(ctx context.Context, e *env, send func(s *adjustSystem, pl [][]byte) error) (metrics, error) {
	s, err := openAdjust(e)
	if err != nil {
		return nil, err
	}
	pl := payloads(e.n, "p")
	m := metrics{}
	meter := startMeter(ctx, e)
	err = send(s, pl)
	if err == nil {
		err = meter.stop(ctx, e.n, m)
	}
	return m, errors.Join(err, s.close())
}

var produceBareZAdd = produceZAdds("bare ZADD", func(ctx context.Context, addr string, pl [][]byte) error {
	r := newRedis(addr)
	defer r.Close()
	return bareZAdd(ctx, r, pl, produceBatch)
})

// bestOf returns, per round, the largest of the given series; a round in
// which a series that ran in some round has no value (its run failed) has
// none, since the best of that round is unknown: taking the best of the
// others would compare against a slower peer as if it were the best.
func bestOf(series ...[]float64) []float64 {
	out := make([]float64, len(series[0]))
	for i := range out {
		out[i] = math.NaN()
		unknown := false
		for _, s := range series {
			switch {
			case math.IsNaN(s[i]):
				unknown = unknown || slices.ContainsFunc(s, func(v float64) bool { return !math.IsNaN(v) })
			case math.IsNaN(out[i]) || s[i] > out[i]:
				out[i] = s[i]
			}
		}
		if unknown {
			out[i] = math.NaN()
		}
	}
	return out
}

func reportProduce(rep *report, res *scenarioResults) {
	rep.printf("## 1. Produce\n\n")
	rep.printf("n messages into an empty Redis, timed from the first call until every call has returned. "+
		"One call per message comes from %d goroutines; batches of %s come from one goroutine. "+
		"RMQ writes a Priority topic of %d slots; the yardstick writes the same members with the same scores "+
		"as one-member ZADDs into %d keys, %s commands per go-redis pipeline. asynq has no batch API.\n\n",
		rep.cfg.produceGoroutines, thousands(produceBatch), produceSlots, bareSlots, thousands(produceBatch))
	t := newTable("Variant", "msgs/s", "client CPU /100k msgs", "Redis CPU /100k msgs")
	for _, name := range res.order {
		t.add(append([]string{name, stat(res.values(name, mRate), num)}, cpuCells(res, name)...)...)
	}
	t.write(rep.w)

	sendVsBest := reportThroughputRatios(rep, res, []string{vRMQSend, vRMQSendPipe}, []string{vAsynqEnqueue, vAdjustPublish})
	rate := func(name string) []float64 { return res.perRound(name, mRate) }
	bt := newTable(roundHead("Batch ratio", res.rounds)...)
	var batchVsZAdd []float64
	if res.has(vRMQSendBatch) && res.has(vBareZAdd) {
		batchVsZAdd = ratios(rate(vRMQSendBatch), rate(vBareZAdd))
		bt.add(append([]string{"**" + vRMQSendBatch + " as % of pipelined ZADD**"}, perRoundCells(batchVsZAdd, pct)...)...)
	}
	if res.has(vRMQSendBatch) && res.has(vAdjustBatch) {
		bt.add(append([]string{vRMQSendBatch + " ÷ " + vAdjustBatch}, perRoundCells(ratios(rate(vRMQSendBatch), rate(vAdjustBatch)), ratio)...)...)
	}
	if len(bt.rows) > 0 {
		bt.write(rep.w)
	}
	reportInflight(rep, res)
	if sendVsBest != nil {
		v := median(sendVsBest)
		rep.target("Produce, one Send per message", "≥ 2× the best peer", ratio(v), verdict(v, func(x float64) bool { return x >= 2 }))
	}
	if batchVsZAdd != nil {
		v := median(batchVsZAdd)
		rep.target("Produce, SendBatch", "≥ 75% of pipelined ZADD", pct(v), verdict(v, func(x float64) bool { return x >= 0.75 }))
	}
}
