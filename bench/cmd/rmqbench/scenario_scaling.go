package main

import (
	"context"
	"fmt"
)

// Scaling: RMQ consume throughput with SlotAmount = threads = N.

var scalingSizes = []int{1, 4, 16, 64}

func scalingName(n int) string { return fmt.Sprintf("N = %d", n) }

var scalingScenario = &scenario{
	key: "scaling",
	variants: func(*config) []variant {
		var vs []variant
		for _, n := range scalingSizes {
			vs = append(vs, variant{"rmq", scalingName(n), func(ctx context.Context, e *env) (metrics, error) {
				return rmqDrain(ctx, e, n, n, e.rmqBatch)
			}})
		}
		return vs
	},
	report: reportScaling,
}

func reportScaling(rep *report, res *scenarioResults) {
	if len(res.order) == 0 {
		return
	}
	rep.printf("## 7. Scaling\n\n")
	batch := "the default batch size"
	if rep.cfg.rmqBatch > 0 {
		batch = fmt.Sprintf("WithBatchSize(%d)", rep.cfg.rmqBatch)
	}
	rep.printf("RMQ consume throughput (the consume scenario's method: a backlog of n on a Priority topic, no-op "+
		"listener, %s, timed to the last commit) with SlotAmount = threads = N, all threads in one process. "+
		"Speed-up is the per-round ratio to N = 1, median over rounds. Redis busy is the server's CPU time over the "+
		"timed section's wall time: near 100%%, the one Redis core is the limit, not the client.\n\n", batch)
	t := newTable("SlotAmount = threads", "msgs/s", "speed-up vs N = 1", "Redis busy", "client CPU /100k msgs", "Redis CPU /100k msgs")
	base := scalingName(scalingSizes[0])
	for _, name := range res.order {
		up := "—"
		if res.has(base) {
			up = ratio(median(ratios(res.perRound(name, mRate), res.perRound(base, mRate))))
		}
		t.add(append([]string{name, stat(res.values(name, mRate), num), up, stat(res.values(name, mRedisBusy), pct)}, cpuCells(res, name)...)...)
	}
	t.write(rep.w)
}
