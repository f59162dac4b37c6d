package main

import "fmt"

// manySlotsTarget is the most Redis commands per second an idle slot may cost.
const manySlotsTarget = 0.05

func reportManySlots(rep *report, res *scenarioResults) {
	if !res.has(vManyRMQ) {
		return
	}
	c := rep.cfg
	threads := "WithThreads default (1)"
	if c.manyThreads > 0 {
		threads = fmt.Sprintf("WithThreads(%d)", c.manyThreads)
	}
	total := c.manyTopics * c.manySlots
	rep.printf("## 10. Many idle slots\n\n")
	rep.printf("One RMQ client subscribed to %d empty FixedTime topics of %d slots each (%s slots; %s per topic; default "+
		"idle poll). Start-up is Start until the client holds every slot (the sum of TopicMetrics' OwnedSlots); Close "+
		"is the worker's Close at the end, until it returns (every lease revoked, every slot's record handed back). After a "+
		"further %s, an idle window of %s: Redis commands are the INFO commandstats delta, which counts every command a Lua "+
		"script runs as well as the script call itself, minus our INFO calls and the commands of the producer below (a "+
		"second client sending through go-redis pipelines, counted by a hook). Sent by the worker is what its go-redis "+
		"client sent (a hook); run inside scripts is the difference. During the window the producer sends %d FixedTime "+
		"messages, evenly spread, each to a random topic and due 100–1000 ms after its send; their deliveries are "+
		"included in the idle figures. Memory is this process's: the Go heap in use after a collection and VmRSS, each "+
		"also as the growth since before the client was created; client CPU is its user and system time over the "+
		"window (the worker's and the producer's).\n\n",
		c.manyTopics, c.manySlots, thousands(int64(total)), threads, manyWarmup, c.manyWindow, c.manyMessages)
	names := []string{vManyRMQ}
	head := []string{"Measure", "median (min–max)"}
	if res.has(vManyRMQCluster) {
		names = append(names, vManyRMQCluster)
		head = []string{"Measure", "single node", "Cluster (all 6 nodes)"}
	}
	t := newTable(head...)
	row := func(label, key string, f func(float64) string) {
		cells := []string{label}
		for _, name := range names {
			cells = append(cells, stat(res.values(name, key), f))
		}
		t.add(cells...)
	}
	row("start-up: Start → every slot held", mStartup, func(x float64) string { return num(x) + " s" })
	row("Close: until it returned, every slot handed back", mClose, func(x float64) string { return num(x) + " s" })
	row("slots held at the end of the window", mSlotsHeld, count)
	row("**Redis commands/s per idle slot** (Lua-internal included)", mServerPerSlot, num3)
	row("Redis commands/s, all slots", mServerPerSec, num)
	row("… sent by the worker's client", mIssuedPerSec, num)
	row("… run inside its scripts", mScriptPerSec, num)
	row("commands/s sent by the worker per idle slot", mIssuedPerSlot, num3)
	row("Redis CPU over the window", mWindowRedisCP, pct1)
	row("client CPU over the window (this process: worker and producer)", mWindowClient, pct1)
	row("Go heap in use (after GC)", mHeapInUse, mib)
	row("… growth since before New", mHeapDelta, mib)
	row("process RSS", mRSS, mib)
	row("… growth since before New", mRSSDelta, mib)
	row(fmt.Sprintf("lateness of the %d messages: p50", c.manyMessages), mLateP50, ms)
	row("… p99", mLateP99, ms)
	row("… max", mLateMax, ms)
	row("… delivered early (count)", mEarly, count)
	t.write(rep.w)
	if res.has(vManyRMQCluster) {
		rep.printf("On the Cluster the idle sweep asks with one EXISTS per slot (the slots' keys live under different " +
			"hash tags), where the single server takes one per 300 slots, so a Cluster's threads sweep every 20th idle " +
			"poll (a minute by default; WithIdleSweep) and the single server's every poll. A thread's first sweep comes " +
			"at a random moment within its interval, so the window sees the share of sweeps a steady state would (about " +
			"a third of the threads sweep in 20 s). The Cluster's figures are the sums over its six nodes, replicas " +
			"included.\n\n")
	}
	perSlot := median(res.perRound(vManyRMQ, mServerPerSlot))
	rep.target("Many idle slots", fmt.Sprintf("≤ %s Redis commands/s per idle slot", num3(manySlotsTarget)),
		num3(perSlot)+" (Lua-internal included)", verdict(perSlot, func(x float64) bool { return x <= manySlotsTarget }))
	if res.has(vManyRMQCluster) {
		perSlot := median(res.perRound(vManyRMQCluster, mServerPerSlot))
		rep.target("Many idle slots, Cluster", fmt.Sprintf("≤ %s Redis commands/s per idle slot", num3(manySlotsTarget)),
			num3(perSlot)+" (all six nodes, Lua-internal included)",
			verdict(perSlot, func(x float64) bool { return x <= manySlotsTarget }))
	}
}

// num3 formats small rates with three decimals.
func num3(v float64) string {
	if v >= 10 {
		return num(v)
	}
	return fmt.Sprintf("%.3f", v)
}

// pct1 formats a share with one decimal.
func pct1(v float64) string { return fmt.Sprintf("%.1f%%", v*100) }
