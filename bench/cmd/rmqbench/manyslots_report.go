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
		"idle poll). Start-up is Start until the client holds every slot (the sum of TopicMetrics' OwnedSlots). After a "+
		"further %s, an idle window of %s: Redis commands are the INFO commandstats delta, which counts every command a Lua "+
		"script runs as well as the script call itself, minus our INFO calls and the commands of the producer below (a "+
		"second client sending through go-redis pipelines, counted by a hook). Sent by the worker is what its go-redis "+
		"client sent (a hook); run inside scripts is the difference. During the window the producer sends %d FixedTime "+
		"messages, evenly spread, each to a random topic and due 100–1000 ms after its send; their deliveries are "+
		"included in the idle figures. Memory is this process's: the Go heap in use after a collection and VmRSS, each "+
		"also as the growth since before the client was created.\n\n",
		c.manyTopics, c.manySlots, thousands(int64(total)), threads, manyWarmup, c.manyWindow, c.manyMessages)
	v := func(key string) []float64 { return res.values(vManyRMQ, key) }
	t := newTable("Measure", "median (min–max)")
	t.add("start-up: Start → every slot held", stat(v(mStartup), func(x float64) string { return num(x) + " s" }))
	t.add("slots held at the end of the window", stat(v(mSlotsHeld), count))
	t.add("**Redis commands/s per idle slot** (Lua-internal included)", stat(v(mServerPerSlot), num3))
	t.add("Redis commands/s, all slots", stat(v(mServerPerSec), num))
	t.add("… sent by the worker's client", stat(v(mIssuedPerSec), num))
	t.add("… run inside its scripts", stat(v(mScriptPerSec), num))
	t.add("commands/s sent by the worker per idle slot", stat(v(mIssuedPerSlot), num3))
	t.add("Redis CPU over the window", stat(v(mWindowRedisCP), pct1))
	t.add("Go heap in use (after GC)", stat(v(mHeapInUse), mib))
	t.add("… growth since before New", stat(v(mHeapDelta), mib))
	t.add("process RSS", stat(v(mRSS), mib))
	t.add("… growth since before New", stat(v(mRSSDelta), mib))
	t.add(fmt.Sprintf("lateness of the %d messages: p50", c.manyMessages), stat(v(mLateP50), ms))
	t.add("… p99", stat(v(mLateP99), ms))
	t.add("… max", stat(v(mLateMax), ms))
	t.add("… delivered early (count)", stat(v(mEarly), count))
	t.write(rep.w)
	perSlot := median(res.perRound(vManyRMQ, mServerPerSlot))
	rep.target("Many idle slots", fmt.Sprintf("≤ %s Redis commands/s per idle slot", num3(manySlotsTarget)),
		num3(perSlot)+" (Lua-internal included)", verdict(perSlot, func(x float64) bool { return x <= manySlotsTarget }))
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
