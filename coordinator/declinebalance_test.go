package coordinator

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// README (Redis coordinator, "A worker cut off from one master alone"): the
// leader assigns a decliner's slots to workers that do not decline them,
// "giving the decliner others' slots in their place so that its share stays
// whole"; the assignment is "balanced" (Assign: per-thread counts differ by
// at most one). Two workers of 4 threads, 16 slots, one Cluster master's 5
// slots cut off from a: a can take 8 of the 11 it reaches, so every thread
// can hold exactly 2.
func TestAssignAvoidingKeepsTheDeclinersShareWhole(t *testing.T) {
	workers := []WorkerThreads{{"a", 4}, {"b", 4}}
	prev := Assign(16, workers, nil)
	declined := map[string][]int{"a": {5, 6, 8, 9, 12}}
	out := AssignAvoiding(16, workers, prev, declined)
	perWorker := map[string]int{}
	for s, o := range out {
		assert.False(t, o.Worker == "a" && (s == 5 || s == 6 || s == 8 || s == 9 || s == 12), "slot %d stays with a", s)
		perWorker[o.Worker]++
	}
	assert.Equal(t, 8, perWorker["a"], "the decliner's share is not whole")
	for u, n := range perThread(out, workers) {
		assert.Equal(t, 2, n, "thread %v holds %d slots, its share is 2 (assignment %v)", u, n, out)
	}
}

// The same as a property: one worker declines the slots of one of three
// Cluster masters (random slot→master map); whenever some assignment that
// honours the declines gives every thread base or base+1 slots,
// AssignAvoiding's does too.
func TestAssignAvoidingBalancedWhenPossible(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	feasible, unbalanced := 0, 0
	var first string
	for n := range 3000 {
		slots := []int{16, 32, 64}[r.IntN(3)]
		master := make([]int, slots)
		for s := range master {
			master[s] = r.IntN(3)
		}
		var workers []WorkerThreads
		for w := range 2 + r.IntN(3) {
			workers = append(workers, WorkerThreads{fmt.Sprintf("w%d", w), 1 + r.IntN(4)})
		}
		var cut []int
		for s := range slots {
			if master[s] == 0 {
				cut = append(cut, s)
			}
		}
		declined := map[string][]int{"w0": cut}
		out := AssignAvoiding(slots, workers, Assign(slots, workers, nil), declined)
		units := threadUnits("", workers)
		refused, _ := effectiveDeclines(slots, workers, declined)
		if !balancedFeasible(slots, units, refused) {
			continue
		}
		feasible++
		base := slots / len(units)
		for u, c := range perThread(out, workers) {
			if c < base || c > base+1 {
				unbalanced++
				if first == "" {
					first = fmt.Sprintf("case %d: %d slots, workers %v, w0 declines %v: thread %v holds %d, share %d or %d",
						n, slots, workers, cut, u, c, base, base+1)
				}
				break
			}
		}
	}
	assert.Zero(t, unbalanced, "%d of %d feasible cases unbalanced; first: %s", unbalanced, feasible, first)
}

// balancedFeasible reports whether some assignment gives every slot
// to a unit that does not refuse it, each unit holding base or base+1
// (bipartite matching with capacities base, then base+1: augmenting paths
// never lower a unit's count, so the first phase's saturation stands).
func balancedFeasible(slots int, units []Owner, refused map[string]map[int]bool) bool {
	n := len(units)
	base := slots / n
	capacity := make([]int, n)
	count := make([]int, n)
	owner := make([]int, slots)
	for s := range owner {
		owner[s] = -1
	}
	var augment func(s int, seen []bool) bool
	augment = func(s int, seen []bool) bool {
		for u := range n {
			if seen[u] || refused[units[u].Worker][s] {
				continue
			}
			seen[u] = true
			if count[u] < capacity[u] {
				owner[s] = u
				count[u]++
				return true
			}
			for s2 := range slots {
				if owner[s2] == u && augment(s2, seen) {
					count[u]--
					owner[s] = u
					count[u]++
					return true
				}
			}
		}
		return false
	}
	total := 0
	for phase := range 2 {
		for u := range capacity {
			capacity[u] = base + phase
		}
		for s := range slots {
			if owner[s] < 0 && augment(s, make([]bool, n)) {
				total++
			}
		}
		if phase == 0 && total < n*base {
			return false
		}
	}
	return total == slots
}

// README: "A master down for every worker is declined by every worker, and
// a slot that every worker declines stays where it is: a master's failover
// moves no slot this way"; AssignAvoiding: such a slot "is assigned as if
// nobody did" (Assign keeps it with its owner). Here master M1 (slot 1) is
// down for both workers while b is also cut off from M2 (slot 2): b's slot
// 2 must go to a, and a must give b one slot back, but not slot 1, which
// nobody can serve and which Assign would keep with a.
func TestAssignAvoidingLeavesASlotEveryoneDeclinesInPlace(t *testing.T) {
	workers := []WorkerThreads{{"a", 1}, {"b", 1}}
	prev := []Owner{{"a", 0}, {"a", 0}, {"b", 0}, {"b", 0}}
	out := AssignAvoiding(4, workers, prev, map[string][]int{"a": {1}, "b": {1, 2}})
	assert.Equal(t, Owner{"a", 0}, out[2], "b declines slot 2, a accepts it")
	assert.Equal(t, prev[1], out[1], "slot 1, declined by every worker, moved: %v → %v", prev, out)
}

// BenchmarkAssignAvoidingLargeTopic: the leader's assignment of a topic of
// 65,536 slots (the most a topic may have) over 16 threads when one worker
// cannot reach a third of them.
func BenchmarkAssignAvoidingLargeTopic(b *testing.B) {
	const n = 1 << 16
	workers := []WorkerThreads{{"a", 4}, {"b", 4}, {"c", 4}, {"d", 4}}
	var cut []int
	for s := 0; s < n; s += 3 {
		cut = append(cut, s)
	}
	prev := Assign(n, workers, nil)
	for b.Loop() {
		AssignAvoiding(n, workers, prev, map[string][]int{"a": cut})
	}
}
