package coordinator_test

import (
	"fmt"

	"github.com/rmq-go/rmq/coordinator"
)

// Assign is pure: every worker computing it from the same inputs agrees.
func ExampleAssign() {
	prev := coordinator.Assign(8, []coordinator.WorkerThreads{{Worker: "a", Threads: 1}}, nil)
	next := coordinator.Assign(8, []coordinator.WorkerThreads{{Worker: "a", Threads: 1}, {Worker: "b", Threads: 1}}, prev)
	for slot, o := range next {
		if o != prev[slot] {
			fmt.Println("slot", slot, "moves to", o.Worker)
		}
	}
	// Output:
	// slot 4 moves to b
	// slot 5 moves to b
	// slot 6 moves to b
	// slot 7 moves to b
}

// A worker that cannot reach slots 0 and 1 (their master cut off from it
// alone) declines them: they move to the other worker, which gives two of
// its own slots in their place, so both keep their share.
func ExampleAssignAvoiding() {
	workers := []coordinator.WorkerThreads{{Worker: "a", Threads: 1}, {Worker: "b", Threads: 1}}
	prev := coordinator.Assign(8, workers, nil)
	next := coordinator.AssignAvoiding(8, workers, prev, map[string][]int{"a": {0, 1}})
	for slot, o := range next {
		if o != prev[slot] {
			fmt.Println("slot", slot, "moves from", prev[slot].Worker, "to", o.Worker)
		}
	}
	// Output:
	// slot 0 moves from a to b
	// slot 1 moves from a to b
	// slot 6 moves from b to a
	// slot 7 moves from b to a
}
