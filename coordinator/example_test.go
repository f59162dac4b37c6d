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
