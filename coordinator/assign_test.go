package coordinator

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// perThread counts slots per (worker, thread) unit, including idle units.
func perThread(a []Owner, workers []WorkerThreads) map[Owner]int {
	n := map[Owner]int{}
	for _, w := range workers {
		for t := range w.Threads {
			n[Owner{w.Worker, t}] = 0
		}
	}
	for _, o := range a {
		n[o]++
	}
	return n
}

func spread(m map[Owner]int) (lo, hi int) {
	lo, hi = 1<<30, 0
	for _, v := range m {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func moved(a, b []Owner) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

func TestAssignBalance(t *testing.T) {
	cases := []struct {
		name    string
		slots   int
		workers []WorkerThreads
	}{
		{"one worker one thread", 64, []WorkerThreads{{"a", 1}}},
		{"even", 64, []WorkerThreads{{"a", 4}, {"b", 4}}},
		{"uneven slots", 64, []WorkerThreads{{"a", 3}, {"b", 3}, {"c", 3}}},
		{"more threads than slots", 4, []WorkerThreads{{"a", 3}, {"b", 3}}},
		{"six workers", 64, []WorkerThreads{{"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}, {"e", 2}, {"f", 2}}},
		{"one slot", 1, []WorkerThreads{{"a", 2}, {"b", 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := Assign(tc.slots, tc.workers, nil)
			require.Len(t, a, tc.slots)
			for s, o := range a {
				assert.NotEmpty(t, o.Worker, "slot %d unassigned", s)
			}
			lo, hi := spread(perThread(a, tc.workers))
			assert.LessOrEqual(t, hi-lo, 1, "max-min slots per thread")
		})
	}
}

func TestAssignProportionalToThreads(t *testing.T) {
	workers := []WorkerThreads{{"small", 1}, {"big", 3}}
	a := Assign(64, workers, nil)
	per := map[string]int{}
	for _, o := range a {
		per[o.Worker]++
	}
	assert.Equal(t, 16, per["small"])
	assert.Equal(t, 48, per["big"])
}

func TestAssignCountsADuplicatedWorkerOnce(t *testing.T) {
	a := Assign(8, []WorkerThreads{{"a", 2}, {"a", 2}, {"b", 2}}, nil)
	lo, hi := spread(perThread(a, []WorkerThreads{{"a", 2}, {"b", 2}}))
	assert.Equal(t, 2, lo)
	assert.Equal(t, 2, hi)
}

func TestAssignNoWorkers(t *testing.T) {
	a := Assign(8, nil, nil)
	assert.Equal(t, make([]Owner, 8), a)
}

func TestAssignIsDeterministic(t *testing.T) {
	w1 := []WorkerThreads{{"a", 2}, {"b", 3}, {"c", 1}}
	w2 := []WorkerThreads{{"c", 1}, {"a", 2}, {"b", 3}}
	prev := Assign(64, []WorkerThreads{{"a", 2}, {"b", 1}}, nil)
	assert.Equal(t, Assign(64, w1, prev), Assign(64, w2, prev), "worker order must not matter")
	assert.Equal(t, Assign(64, w1, prev), Assign(64, w1, prev))
}

func TestAssignIsSticky(t *testing.T) {
	cases := []struct {
		name      string
		before    []WorkerThreads
		after     []WorkerThreads
		wantMoved int
	}{
		// 64 slots over 4 threads (16 each) → 6 threads: shares 11,11,11,11,10,10;
		// the old threads keep 11 each, so exactly the new threads' 20 move.
		{"join", []WorkerThreads{{"a", 2}, {"b", 2}}, []WorkerThreads{{"a", 2}, {"b", 2}, {"c", 2}}, 20},
		// c leaves: only its slots move.
		{"leave", []WorkerThreads{{"a", 2}, {"b", 2}, {"c", 2}}, []WorkerThreads{{"a", 2}, {"b", 2}}, -1},
		{"same", []WorkerThreads{{"a", 2}, {"b", 2}}, []WorkerThreads{{"b", 2}, {"a", 2}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prev := Assign(64, tc.before, nil)
			next := Assign(64, tc.after, prev)
			lo, hi := spread(perThread(next, tc.after))
			assert.LessOrEqual(t, hi-lo, 1)
			want := tc.wantMoved
			if want < 0 { // every slot of a departed worker, and nothing else
				want = 0
				for _, o := range prev {
					if o.Worker == "c" {
						want++
					}
				}
			}
			assert.Equal(t, want, moved(prev, next))
			if tc.name == "leave" {
				for s := range prev {
					if prev[s].Worker != "c" {
						assert.Equal(t, prev[s], next[s], "slot %d moved needlessly", s)
					}
				}
			}
		})
	}
}

func TestAssignRandomChurnStaysBalancedAndMinimal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var workers []WorkerThreads
	var prev []Owner
	for step := range 300 {
		if len(workers) > 0 && r.IntN(3) == 0 {
			i := r.IntN(len(workers))
			workers = append(workers[:i], workers[i+1:]...)
		} else {
			workers = append(workers, WorkerThreads{fmt.Sprintf("w%d", step), 1 + r.IntN(4)})
		}
		if len(workers) > 12 {
			workers = workers[1:]
		}
		next := Assign(64, workers, prev)
		units := perThread(next, workers)
		if len(units) > 0 {
			lo, hi := spread(units)
			require.LessOrEqual(t, hi-lo, 1, "step %d", step)
		}
		// Lower bound on moves: slots whose previous thread is gone, plus the
		// excess of threads above their new share.
		if prev != nil && len(units) > 0 {
			lowerBound := 0
			heldBefore := map[Owner]int{}
			for _, o := range prev {
				if _, alive := units[o]; alive {
					heldBefore[o]++
				} else {
					lowerBound++
				}
			}
			ceil := (64 + len(units) - 1) / len(units)
			for _, n := range heldBefore {
				lowerBound += max(0, n-ceil)
			}
			require.GreaterOrEqual(t, moved(prev, next), lowerBound)
			require.LessOrEqual(t, moved(prev, next), lowerBound+len(units), "step %d: too many moves", step)
		}
		prev = next
	}
}
