package coordinator

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A topic with fewer slots than threads goes to as many workers as it can,
// one thread of each before a second thread of any: four workers of four
// threads and four slots, one slot each. Ten such topics all went to the
// first worker's threads.
func TestAssignSpreadsFewSlotsOverWorkers(t *testing.T) {
	workers := []WorkerThreads{{"w1", 4}, {"w2", 4}, {"w3", 4}, {"w4", 4}}
	per := map[string]int{}
	for _, o := range Assign(4, workers, nil) {
		per[o.Worker]++
	}
	assert.Equal(t, map[string]int{"w1": 1, "w2": 1, "w3": 1, "w4": 1}, per)
}

// Topics of one slot each go to different workers (AssignTopic: the topic's
// name picks where ties start), not all to the first.
func TestAssignTopicSpreadsSmallTopicsOverWorkers(t *testing.T) {
	workers := []WorkerThreads{{"w1", 2}, {"w2", 2}, {"w3", 2}, {"w4", 2}}
	per := map[string]int{}
	for i := range 40 {
		o := AssignTopic(fmt.Sprintf("topic-%d", i), 1, workers, nil, nil)
		per[o[0].Worker]++
		again := AssignTopic(fmt.Sprintf("topic-%d", i), 1, workers, o, nil)
		assert.Equal(t, o, again, "sticky")
	}
	t.Logf("one-slot topics per worker: %v", per)
	for _, w := range workers {
		assert.Greater(t, per[w.Worker], 3, "worker %s got %d of 40 one-slot topics", w.Worker, per[w.Worker])
	}
}
