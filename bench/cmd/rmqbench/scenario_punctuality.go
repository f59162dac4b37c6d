package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hibiken/asynq"
	"github.com/rmq-go/rmq"
)

// Punctuality: 2,000 messages due evenly between 1 s and 5 s ahead, sent to a
// consumer that is already running and idle. Lateness = the moment the
// listener starts − the due time (negative: early).

const (
	punctualMessages = 2000
	punctualFirst    = time.Second
	punctualSpan     = 4 * time.Second
	punctualWait     = 15 * time.Second // after the last due time, before giving up on stragglers

	vPunctRMQ        = "RMQ"
	vPunctRMQAhead   = "RMQ, lookahead 1 s"
	vPunctAsynqDef   = "asynq, default settings"
	vPunctAsynqTuned = "asynq, tuned"
)

var punctualityScenario = &scenario{
	key: "punctuality",
	variants: func(*config) []variant {
		return []variant{
			{"rmq", vPunctRMQ, func(ctx context.Context, e *env) (metrics, error) { return punctualRMQ(ctx, e, 0) }},
			{"rmq", vPunctRMQAhead, func(ctx context.Context, e *env) (metrics, error) {
				return punctualRMQ(ctx, e, time.Second)
			}},
			{"asynq", vPunctAsynqDef, func(ctx context.Context, e *env) (metrics, error) {
				return punctualAsynq(ctx, e, asynq.Config{Concurrency: 16})
			}},
			{"asynq", vPunctAsynqTuned, func(ctx context.Context, e *env) (metrics, error) {
				return punctualAsynq(ctx, e, asynq.Config{Concurrency: 16,
					DelayedTaskCheckInterval: 100 * time.Millisecond, TaskCheckInterval: 10 * time.Millisecond})
			}},
		}
	},
	report: reportPunctuality,
}

func punctualSettings(name string) string {
	switch name {
	case vPunctRMQ:
		return fmt.Sprintf("FixedTime topic, %d slots, WithThreads(16), default idle poll (3 s); SendBatch", consumeSlots)
	case vPunctRMQAhead:
		return "the same, WithLookahead(1s)"
	case vPunctAsynqDef:
		return "ProcessAt; Concurrency 16, DelayedTaskCheckInterval 5 s, TaskCheckInterval 1 s (defaults)"
	case vPunctAsynqTuned:
		return "ProcessAt; Concurrency 16, DelayedTaskCheckInterval 100 ms, TaskCheckInterval 10 ms"
	}
	return ""
}

// dueTimes returns punctualMessages due times spread evenly over
// [now+1s, now+5s), whole milliseconds.
func dueTimes() []time.Time {
	base := time.Now().Add(punctualFirst).Truncate(time.Millisecond)
	out := make([]time.Time, punctualMessages)
	for i := range out {
		out[i] = base.Add(time.Duration(i) * punctualSpan / punctualMessages)
	}
	return out
}

// awaitLateness waits until every message arrived or punctualWait after the last due time.
func awaitLateness(ctx context.Context, l *lateness) metrics {
	deadline := time.Until(l.due[len(l.due)-1]) + punctualWait
	select {
	case <-l.done:
	case <-time.After(deadline):
	case <-ctx.Done():
	}
	return l.metrics()
}

func punctualRMQ(ctx context.Context, e *env, lookahead time.Duration) (metrics, error) {
	s, err := openRMQ(e, nil)
	if err != nil {
		return nil, err
	}
	const topic = "punctual"
	if err := s.define(ctx, topic, consumeSlots, rmq.FixedTime); err != nil {
		return nil, errors.Join(err, s.close())
	}
	var l *lateness
	ready := make(chan struct{})
	listener := rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
		at := time.Now()
		<-ready
		l.record(m.Content, at)
		return nil
	})
	if err := s.c.Subscribe(topic, listener, rmq.WithThreads(16), rmq.WithLookahead(lookahead)); err != nil {
		return nil, errors.Join(err, s.close())
	}
	s.start()
	time.Sleep(500 * time.Millisecond) // let it subscribe and go idle
	due := dueTimes()
	l = newLateness(due)
	close(ready)
	msgs := make([]rmq.OutgoingMessage, len(due))
	for i, d := range due {
		msgs[i] = rmq.FixedTimeMessage{Topic: topic, Content: payload("t", i), FixedTime: d}
	}
	meter := startMeter(ctx, e)
	if err := s.c.Producer().SendBatch(ctx, msgs...); err != nil {
		return nil, errors.Join(err, s.close())
	}
	m := awaitLateness(ctx, l)
	err = meterPunctual(ctx, meter, m)
	return m, errors.Join(err, s.close())
}

// meterPunctual records the CPU of the timed section (the send, the wait
// and every delivery) per message, leaving the lateness figures as they are.
func meterPunctual(ctx context.Context, meter *meter, m metrics) error {
	cpu := metrics{}
	if err := meter.stop(ctx, punctualMessages, cpu); err != nil {
		return err
	}
	m[mClientCPU], m[mRedisCPU] = cpu[mClientCPU], cpu[mRedisCPU]
	return nil
}

func punctualAsynq(ctx context.Context, e *env, cfg asynq.Config) (metrics, error) {
	r := newRedis(e.addr)
	defer r.Close()
	var l *lateness
	ready := make(chan struct{})
	handler := asynq.HandlerFunc(func(_ context.Context, t *asynq.Task) error {
		at := time.Now()
		<-ready
		l.record(t.Payload(), at)
		return nil
	})
	srv := newAsynqServer(r, cfg)
	if err := srv.Start(handler); err != nil {
		return nil, err
	}
	defer srv.Shutdown()
	time.Sleep(500 * time.Millisecond)
	due := dueTimes()
	l = newLateness(due)
	close(ready)
	c := asynq.NewClientFromRedisClient(r)
	defer c.Close()
	pl := make([][]byte, len(due))
	for i := range pl {
		pl[i] = payload("t", i)
	}
	meter := startMeter(ctx, e)
	if err := asynqEnqueueAll(ctx, c, pl, 32, func(i int) []asynq.Option {
		return []asynq.Option{asynq.ProcessAt(due[i])}
	}); err != nil {
		return nil, err
	}
	m := awaitLateness(ctx, l)
	return m, meterPunctual(ctx, meter, m)
}

func reportPunctuality(rep *report, res *scenarioResults) {
	rep.printf("## 3. Punctuality\n\n")
	rep.printf("%s messages due evenly between %s and %s ahead, sent in one go to a consumer that is already running "+
		"and idle. Lateness = the moment the listener starts − the due time; negative means delivered early. "+
		"Cells: median over rounds (min–max). \"early\" and \"missing\" (not delivered within %s after the last due "+
		"time) are totals over all rounds.\n\n",
		thousands(punctualMessages), punctualFirst, punctualFirst+punctualSpan, punctualWait)
	t := newTable(append([]string{"System", "settings"}, punctualColumns...)...)
	for _, name := range res.order {
		t.add(append([]string{name, punctualSettings(name)}, punctualCells(res, name)...)...)
	}
	t.write(rep.w)
	rep.printf("CPU per message covers the timed section: the send, the wait for the first due time, and every delivery " +
		"(with the idle looks of the 64 slots meanwhile), divided by the messages.\n\n")
	for _, v := range []string{vPunctRMQ, vPunctRMQAhead} {
		if res.has(v) {
			punctualTargets(rep, res, v)
		}
	}
}

// punctualColumns head the lateness and CPU cells of a punctuality row.
var punctualColumns = []string{"p50", "p99", "max", "earliest", "early", "missing", "client CPU /msg", "Redis CPU /msg"}

// punctualCells are the lateness and CPU cells of the punctuality row name.
func punctualCells(res *scenarioResults, name string) []string {
	return []string{stat(res.values(name, mLateP50), ms), stat(res.values(name, mLateP99), ms),
		stat(res.values(name, mLateMax), ms), stat(res.values(name, mLateMin), ms),
		count(sum(res.values(name, mEarly))), count(sum(res.values(name, mMissing))),
		stat(perMessage(res.values(name, mClientCPU)), us), stat(perMessage(res.values(name, mRedisCPU)), us)}
}

// punctualTargets reports the punctuality targets of one RMQ row.
func punctualTargets(rep *report, res *scenarioResults, v string) {
	label := ""
	if v != vPunctRMQ {
		label = " (" + punctualSettings(v)[len("the same, "):] + ")"
	}
	p99 := median(res.values(v, mLateP99))
	rep.target("Punctuality p99"+label, "≤ 5 ms late (median of rounds)", ms(p99), verdict(p99, func(x float64) bool { return x <= 5 }))
	client, rcpu := median(perMessage(res.values(v, mClientCPU))), median(perMessage(res.values(v, mRedisCPU)))
	rep.target("Punctual traffic, client CPU"+label, "≤ 100 µs per message", us(client), verdict(client, func(x float64) bool { return x <= 100 }))
	rep.target("Punctual traffic, Redis CPU"+label, "≤ 40 µs per message", us(rcpu), verdict(rcpu, func(x float64) bool { return x <= 40 }))
	worst := maxOr(res.values(v, mLateMax))
	rep.target("Punctuality max"+label, "≤ 50 ms late (worst round)", ms(worst), verdict(worst, func(x float64) bool { return x <= 50 }))
	earliest := minOr(res.values(v, mLateMin))
	early := sum(res.values(v, mEarly)) + sum(res.values(v, mMissing))
	rep.target("Punctuality, never early (nor lost)"+label, "0 early, 0 missing, all rounds",
		fmt.Sprintf("earliest %s, %s early, %s missing", ms(earliest), count(sum(res.values(v, mEarly))),
			count(sum(res.values(v, mMissing)))),
		verdict(earliest, func(float64) bool { return early == 0 }))
}

// perMessage turns CPU seconds per 100k messages into µs per message.
func perMessage(per100k []float64) []float64 {
	out := make([]float64, len(per100k))
	for i, v := range per100k {
		out[i] = v * 10
	}
	return out
}

func us(v float64) string { return fmt.Sprintf("%.0f µs", v) }

func sum(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}

func maxOr(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Max(xs)
}

func minOr(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	return slices.Min(xs)
}
