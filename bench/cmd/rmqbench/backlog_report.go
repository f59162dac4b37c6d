package main

import "fmt"

// backlogTarget is the least share of the smallest backlog's consume rate
// the largest backlog must keep.
const backlogTarget = 0.85

// usPerMsg formats CPU seconds per 100k messages as µs per message.
func usPerMsg(v float64) string { return num(v*10) + " µs" }

func reportBacklog(rep *report, res *scenarioResults) {
	if len(res.order) == 0 {
		return
	}
	c := rep.cfg
	rep.printf("## 11. Deep backlog\n\n")
	batch := "the default batch size"
	if c.rmqBatch > 0 {
		batch = fmt.Sprintf("WithBatchSize(%d)", c.rmqBatch)
	}
	rep.printf("The consume scenario's drain (%d-slot Priority topic, no-op listener, %d threads, %s, full two-phase path) "+
		"behind a deeper backlog. The topic is filled (not timed) with SendBatch of %s from %d goroutines, distinct "+
		"%d-byte payloads; then the consumer's Start until %s messages are committed (no longer in store, retry or "+
		"prepare, read with Stats) is timed, or the whole backlog when it is smaller. \"To the last listener call\" "+
		"times the same count to the listener call that reached it, without the wait for the last commits (which "+
		"linger up to 250 ms when a batch empties its slot, so a whole drain pays it once). Memory is Redis "+
		"used_memory after − before the fill, divided by the backlog. CPU is per consumed message.\n\n",
		consumeSlots, c.rmqThreads, batch, thousands(backlogChunk), backlogFillers, payloadSize, thousands(int64(c.backlogSample)))
	t := newTable("Backlog", "consumed (timed)", "msgs/s", "… to the last listener call", "Redis busy",
		"client CPU /msg", "Redis CPU /msg", "Redis memory /msg", "fill")
	for _, name := range res.order {
		v := func(k string) []float64 { return res.values(name, k) }
		t.add(name, stat(v(mConsumed), count), stat(v(mRate), num), stat(v(mListenRate), num), stat(v(mRedisBusy), pct),
			stat(v(mClientCPU), usPerMsg), stat(v(mRedisCPU), usPerMsg),
			stat(v(mBytesPerMsg), func(x float64) string { return num(x) + " B" }),
			stat(v(mFillSeconds), func(x float64) string { return num(x) + " s" }))
	}
	t.write(rep.w)
	base := res.order[0]
	for _, name := range res.order {
		if name == backlogName(c.backlogSizes[0]) {
			base = name
		}
	}
	rt := newTable(roundHead("Rate as % of the "+base+" rate", res.rounds)...)
	for _, name := range res.order {
		if name != base {
			rt.add(append([]string{"**" + name + "**"}, perRoundCells(ratios(res.perRound(name, mRate), res.perRound(base, mRate)), pct)...)...)
			rt.add(append([]string{"… to the last listener call"}, perRoundCells(ratios(res.perRound(name, mListenRate), res.perRound(base, mListenRate)), pct)...)...)
		}
	}
	if len(rt.rows) == 0 {
		return
	}
	rep.printf("Per-round consume rate as a share of the first size's (the target reads the full-path rate):\n\n")
	rt.write(rep.w)
	largest := backlogName(c.backlogSizes[len(c.backlogSizes)-1])
	if largest != base && res.has(largest) {
		v := median(ratios(res.perRound(largest, mRate), res.perRound(base, mRate)))
		rep.target("Deep backlog: "+largest, "≥ "+pct(backlogTarget)+" of the "+base+" consume rate", pct(v),
			verdict(v, func(x float64) bool { return x >= backlogTarget }))
	}
}
