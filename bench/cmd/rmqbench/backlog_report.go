package main

import (
	"fmt"
	"strings"
)

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
	base := backlogName(c.backlogSizes[0])
	rt := newTable(roundHead("Rate as % of the first size's", res.rounds)...)
	for _, name := range res.order {
		b := backlogBase(name, c.backlogSizes[0])
		if name == b || !res.has(b) {
			continue
		}
		rt.add(append([]string{"**" + name + "**"}, perRoundCells(ratios(res.perRound(name, mRate), res.perRound(b, mRate)), pct)...)...)
		if b == base {
			rt.add(append([]string{"… to the last listener call"}, perRoundCells(ratios(res.perRound(name, mListenRate), res.perRound(b, mListenRate)), pct)...)...)
		}
	}
	if len(rt.rows) == 0 {
		return
	}
	rep.printf("Per-round consume rate as a share of the first size's, RMQ's against RMQ's, the bare pops' and the " +
		"two-phase floor's against theirs (the target reads RMQ's full-path rate):\n\n")
	rt.write(rep.w)
	largest := c.backlogSizes[len(c.backlogSizes)-1]
	if largest == c.backlogSizes[0] || !res.has(backlogName(largest)) || !res.has(base) {
		return
	}
	v := backlogKeeps(res, backlogName(largest), c.backlogSizes[0])
	measured := pct(v)
	if floor := floorBacklogName(largest); res.has(floor) && res.has(floorBacklogName(c.backlogSizes[0])) {
		measured += " (two-phase floor " + pct(backlogKeeps(res, floor, c.backlogSizes[0])) + " of its own)"
	}
	rep.target("Deep backlog: "+backlogName(largest), "≥ "+pct(backlogTarget)+" of the "+base+" consume rate", measured,
		verdict(v, func(x float64) bool { return x >= backlogTarget }))
	reportBacklogFloor(rep, res, base, largest)
}

// backlogKeeps is the median over rounds of name's rate as a share of its
// system's rate at the first size.
func backlogKeeps(res *scenarioResults, name string, first int) float64 {
	return median(ratios(res.perRound(name, mRate), res.perRound(backlogBase(name, first), mRate)))
}

// backlogBase is the row whose rate name's is a share of: the same system's
// at the first size.
func backlogBase(name string, first int) string {
	switch {
	case isBareBacklog(name):
		return bareBacklogName(first)
	case strings.HasPrefix(name, floorBacklogPrefix):
		return floorBacklogName(first)
	}
	return backlogName(first)
}

// reportBacklogFloor sets the growth of RMQ's Redis CPU per message with the
// backlog beside the growth the bare pops show, and says what share of its
// rate a consumer as costly as RMQ at the first size keeps at the largest
// if it grew by no more than the sorted set itself (Redis being the
// bottleneck, rates go as the inverse of Redis CPU per message).
func reportBacklogFloor(rep *report, res *scenarioResults, base string, largest int) {
	bareBase, bareLargest := bareBacklogName(rep.cfg.backlogSizes[0]), bareBacklogName(largest)
	if !res.has(bareBase) || !res.has(bareLargest) {
		return
	}
	cpu := func(name string) float64 { return median(res.values(name, mRedisCPU)) * 10 } // µs per message
	rmq0, rmq1 := cpu(base), cpu(backlogName(largest))
	bare0, bare1 := cpu(bareBase), cpu(bareLargest)
	rep.printf("Redis CPU per message grows from %s to %s with the backlog: by %.1f µs for RMQ (%.1f → %.1f µs) and by "+
		"%.1f µs for the bare pops (%.1f → %.1f µs), which only take the messages out of the sorted sets. A consumer "+
		"that cost Redis what RMQ costs at %s and grew by no more than the sorted set's own removals would keep "+
		"%s of its rate at %s; keeping %s would need a growth of at most %.1f µs per message.\n\n",
		base, backlogName(largest), rmq1-rmq0, rmq0, rmq1, bare1-bare0, bare0, bare1,
		base, pct(rmq0/(rmq0+bare1-bare0)), backlogName(largest), pct(backlogTarget), rmq0*(1/backlogTarget-1))
	floor0, floor1 := floorBacklogName(rep.cfg.backlogSizes[0]), floorBacklogName(largest)
	if res.has(floor0) && res.has(floor1) {
		rep.printf("The two-phase floor (the consume scenario's script that only commits a key's last batch and pops the "+
			"next into prepare, none of RMQ's checks) grows by %.1f µs (%.1f → %.1f µs) and keeps %s of its rate at %s.\n\n",
			cpu(floor1)-cpu(floor0), cpu(floor0), cpu(floor1),
			pct(backlogKeeps(res, floor1, rep.cfg.backlogSizes[0])), backlogName(largest))
	}
}
