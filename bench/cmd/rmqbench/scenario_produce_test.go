package main

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

// A round in which the best peer's run failed has no "best peer" ratio: it
// was taken against the slower peer, and the target passed on it. Here RMQ
// reaches 1.79× the best peer in the only round that peer ran, 2.59× the
// other's in every round.
func TestBestPeerRatioLeavesOutRoundsTheBestPeerMissed(t *testing.T) {
	vs := []variant{{"rmq", vRMQSend, nil}, {"asynq", vAsynqEnqueue, nil}, {"adjust", vAdjustPublish, nil}}
	res := newScenarioResults(vs, 3)
	for round := 1; round <= 3; round++ {
		res.put(vRMQSend, round, metrics{mRate: 70000})
		res.put(vAsynqEnqueue, round, metrics{mRate: 27000})
	}
	res.put(vAdjustPublish, 1, metrics{mRate: 39000})
	res.fail(vAdjustPublish, 2, errors.New("timeout"))
	res.fail(vAdjustPublish, 3, errors.New("timeout"))

	var out bytes.Buffer
	rep := newReport(&out, &config{produceGoroutines: 16})
	reportProduce(rep, res)
	rep.writeTargets()
	best := reportThroughputRatios(newReport(&bytes.Buffer{}, &config{}), res, []string{vRMQSend},
		[]string{vAsynqEnqueue, vAdjustPublish})
	if math.Abs(best[0]-70000.0/39000) > 1e-9 || !math.IsNaN(best[1]) || !math.IsNaN(best[2]) {
		t.Errorf("per-round ratios to the best peer %v, want [1.79 NaN NaN]", best)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(line, "| Produce, one Send per message") && strings.Contains(line, "PASS") {
			t.Errorf("the target passed against the slower peer: %s", line)
		}
	}
	// A peer never run (left out of the scenario) leaves the others' best.
	if got := bestOf([]float64{1, 2}, []float64{math.NaN(), math.NaN()}); got[0] != 1 || got[1] != 2 {
		t.Errorf("bestOf with a peer not run: %v", got)
	}
}
