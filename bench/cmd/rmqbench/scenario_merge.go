package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rmq-go/rmq"
)

// Merge: n RangeMerge sends over 1,000 distinct contents, all inside one
// merge window, with the consumer running; every content must reach the
// listener once.

const (
	mergeDistinct = 1000
	vMergeRMQ     = "RMQ"
	mSendRate     = "sends_per_s"
)

var mergeScenario = &scenario{
	key: "merge",
	variants: func(*config) []variant {
		return []variant{{"rmq", vMergeRMQ, mergeRMQ}}
	},
	report: reportMerge,
}

func mergeRMQ(ctx context.Context, e *env) (metrics, error) {
	s, err := openRMQ(e, nil)
	if err != nil {
		return nil, err
	}
	const topic = "merge"
	if err := s.define(ctx, topic, consumeSlots, rmq.RangeMerge); err != nil {
		return nil, errors.Join(err, s.close())
	}
	l := newCountingListener(mergeDistinct)
	if err := s.c.Subscribe(topic, l, rmq.WithThreads(16)); err != nil {
		return nil, errors.Join(err, s.close())
	}
	s.start()
	contents := payloads(mergeDistinct, "g")
	m := metrics{}
	meter := startMeter(ctx, e)
	first := time.Now()
	err = parallel(e.n, e.produceGoroutines, func(i int) error {
		return s.c.Producer().Send(ctx, rmq.RangeMergeMessage{Topic: topic, Content: contents[i%mergeDistinct], TimeRange: e.mergeRange})
	})
	if err != nil {
		return nil, errors.Join(err, s.close())
	}
	if err := meter.stop(ctx, e.n, m); err != nil {
		return nil, errors.Join(err, s.close())
	}
	m[mSendRate] = m[mRate]
	delete(m, mRate)
	sendSpan := time.Since(first)
	if sendSpan >= e.mergeRange {
		return nil, errors.Join(fmt.Errorf("sending took %s, longer than the %s window: raise -merge-range", sendSpan, e.mergeRange), s.close())
	}
	// Everything is due mergeRange after its first copy; wait for it, then
	// for the store to empty, then a little longer for stray duplicates.
	time.Sleep(time.Until(first.Add(e.mergeRange)))
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = s.waitSettled(wctx, topic)
	time.Sleep(500 * time.Millisecond)
	m[mCalls] = float64(l.calls.Load())
	return m, errors.Join(err, s.close())
}

func reportMerge(rep *report, res *scenarioResults) {
	if !res.has(vMergeRMQ) {
		return
	}
	rep.printf("## 6. Merge\n\n")
	rep.printf("n RangeMerge Sends (%d goroutines, one Send each) cycling over %s distinct contents, TimeRange %s, "+
		"so every copy lands inside its content's window; the consumer (64 slots, 16 threads) runs throughout. "+
		"The listener should run once per distinct content.\n\n",
		rep.cfg.produceGoroutines, thousands(mergeDistinct), rep.cfg.mergeRange)
	t := newTable("Measure", "median (min–max)")
	t.add("Sends/s", stat(res.values(vMergeRMQ, mSendRate), num))
	t.add("listener calls (distinct contents: "+thousands(mergeDistinct)+")", stat(res.values(vMergeRMQ, mCalls), num))
	t.add("client CPU /100k sends", stat(res.values(vMergeRMQ, mClientCPU), cpuSec))
	t.add("Redis CPU /100k sends", stat(res.values(vMergeRMQ, mRedisCPU), cpuSec))
	t.write(rep.w)
	calls := res.values(vMergeRMQ, mCalls)
	worst := math.NaN()
	for _, c := range calls {
		if d := math.Abs(c-mergeDistinct) / mergeDistinct; math.IsNaN(worst) || d > worst {
			worst = d
		}
	}
	rep.target("Merge", "listener calls within 1% of distinct contents (worst round)",
		fmt.Sprintf("%s calls for %s contents", stat(calls, num), thousands(mergeDistinct)),
		verdict(worst, func(x float64) bool { return x <= 0.01 }))
}
