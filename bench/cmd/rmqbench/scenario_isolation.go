package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rmq-go/rmq"
)

// Isolation: the consume scenario's drain of one topic, alone and beside a
// noisy topic in the same process whose listener blocks for 100 ms or fails
// every call (the breaker at its defaults). The drained topic should keep at
// least 90 % of its rate alone.

const (
	vIsoAlone    = "alone"
	vIsoBlocking = "beside a topic whose listener blocks 100 ms"
	vIsoFailing  = "beside a topic whose listener fails every call"

	noisySlots    = 16 // the noisy topic's slots and threads
	noisyMessages = 20_000
	noisyBlock    = 100 * time.Millisecond
)

var isolationScenario = &scenario{
	key: "isolation",
	variants: func(*config) []variant {
		noisy := func(name string, l rmq.ListenerFunc) variant {
			return variant{"rmq", name, func(ctx context.Context, e *env) (metrics, error) {
				return rmqDrainBeside(ctx, e, l)
			}}
		}
		return []variant{
			noisy(vIsoAlone, nil),
			noisy(vIsoBlocking, func(ctx context.Context, _ *rmq.Message) error {
				select {
				case <-time.After(noisyBlock):
				case <-ctx.Done():
				}
				return nil
			}),
			noisy(vIsoFailing, func(context.Context, *rmq.Message) error {
				return errors.New("downstream is down")
			}),
		}
	},
	report: reportIsolation,
}

// rmqDrainBeside is rmqDrain of e.isolationN messages on consumeSlots slots
// with e.rmqThreads threads, beside (unless noisy is nil) a topic of
// noisySlots slots and threads holding noisyMessages consumed by noisy,
// running before and during the timed drain.
func rmqDrainBeside(ctx context.Context, e *env, noisy rmq.ListenerFunc) (metrics, error) {
	var opts []rmq.Option
	if e.rmqBatch > 0 {
		opts = append(opts, rmq.WithBatchSize(e.rmqBatch))
	}
	s, err := openRMQ(e, nil, opts...)
	if err != nil {
		return nil, err
	}
	const topic, noise = "drain", "noisy"
	fail := func(err error) (metrics, error) { return nil, errors.Join(err, s.close()) }
	if err := s.define(ctx, topic, consumeSlots, rmq.Priority); err != nil {
		return fail(err)
	}
	n := e.isolationN
	if err := s.fillPriority(ctx, topic, payloads(n, "c")); err != nil {
		return fail(err)
	}
	if noisy != nil {
		if err := s.define(ctx, noise, noisySlots, rmq.Priority); err != nil {
			return fail(err)
		}
		if err := s.fillPriority(ctx, noise, payloads(noisyMessages, "z")); err != nil {
			return fail(err)
		}
		if err := s.c.Subscribe(noise, noisy, rmq.WithThreads(noisySlots)); err != nil {
			return fail(err)
		}
	}
	// The drained topic starts paused, so that the noisy one is at work
	// (blocked listeners in hand, or its breaker tripped) when the timing
	// starts.
	if err := s.c.PauseTopic(ctx, topic); err != nil {
		return fail(err)
	}
	l := newCountingListener(n)
	if err := s.c.Subscribe(topic, l, rmq.WithThreads(e.rmqThreads)); err != nil {
		return fail(err)
	}
	s.start()
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return fail(ctx.Err())
	}
	m := metrics{}
	meter := startMeter(ctx, e)
	if err := s.c.ResumeTopic(ctx, topic); err != nil {
		return fail(err)
	}
	select {
	case <-l.done:
	case <-ctx.Done():
		return fail(fmt.Errorf("drained %d of %d: %w", l.calls.Load(), n, ctx.Err()))
	}
	err = s.waitSettled(ctx, topic)
	if err == nil {
		err = meter.stop(ctx, n, m)
	}
	return m, errors.Join(err, s.close())
}

func reportIsolation(rep *report, res *scenarioResults) {
	if len(res.order) == 0 {
		return
	}
	rep.printf("## 8. Isolation\n\n")
	rep.printf("The consume scenario's drain (a backlog of %s on a %d-slot Priority topic, no-op listener, %d threads), "+
		"alone and beside a noisy topic in the same client: %d slots and threads holding %d messages whose listener "+
		"blocks for %s or fails every call (retries and the breaker at their defaults). The drained topic starts "+
		"paused and is resumed a second after Start, with the noisy one at work. Share is the per-round ratio of the "+
		"drained topic's rate to its rate alone, median over rounds.\n\n",
		thousands(int64(rep.cfg.isolationN)), consumeSlots, rep.cfg.rmqThreads, noisySlots, noisyMessages, noisyBlock)
	shares := map[string][]float64{} // per round, of the rate alone
	for _, name := range []string{vIsoBlocking, vIsoFailing} {
		if res.has(name) && res.has(vIsoAlone) {
			shares[name] = ratios(res.perRound(name, mRate), res.perRound(vIsoAlone, mRate))
		}
	}
	t := newTable("drained topic", "msgs/s", "share of alone", "client CPU /100k msgs", "Redis CPU /100k msgs")
	for _, name := range res.order {
		share := "—"
		if s, ok := shares[name]; ok {
			share = pct(median(s))
		}
		t.add(append([]string{name, stat(res.values(name, mRate), num), share}, cpuCells(res, name)...)...)
	}
	t.write(rep.w)
	rt := newTable(roundHead("Share of the rate alone", res.rounds)...)
	for _, name := range []string{vIsoBlocking, vIsoFailing} {
		share, ok := shares[name]
		if !ok {
			continue
		}
		rt.add(append([]string{name}, perRoundCells(share, pct)...)...)
		v := median(share)
		rep.target("Isolation: "+name, "≥ 90 % of the rate alone", pct(v), verdict(v, func(x float64) bool { return x >= 0.9 }))
	}
	if len(rt.rows) > 0 {
		rep.printf("Per-round share of the rate alone (each round runs the three drains in a rotating order):\n\n")
		rt.write(rep.w)
	}
}
