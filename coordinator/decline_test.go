package coordinator

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A worker cut off from a third of the slots' data gives them up to the
// others, keeps its share by taking others' slots, and gets its own back
// once it declines nothing.
func TestAssignAvoidingMovesDeclinedSlots(t *testing.T) {
	workers := []WorkerThreads{{"a", 2}, {"b", 2}, {"c", 2}}
	before := Assign(48, workers, nil)
	var cut []int // a's slots behind the cut, and others'
	for s := range 48 {
		if s%3 == 0 {
			cut = append(cut, s)
		}
	}
	after := AssignAvoiding(48, workers, before, map[string][]int{"a": cut})
	for _, s := range cut {
		assert.NotEqual(t, "a", after[s].Worker, "slot %d declined by a stays with it", s)
	}
	lo, hi := spread(perThread(after, workers))
	assert.Equal(t, 8, lo)
	assert.Equal(t, 8, hi, "a's threads took other slots up to their share")
	for s := range 48 {
		if s%3 != 0 && before[s].Worker != "a" && after[s].Worker == "a" {
			continue // a took one of the others' slots in place of its own
		}
		if before[s].Worker != "a" && after[s] != before[s] && s%3 != 0 {
			t.Errorf("slot %d moved between two workers that decline nothing: %v → %v", s, before[s], after[s])
		}
	}
	assert.Equal(t, after, AssignAvoiding(48, workers, after, map[string][]int{"a": cut}), "not stable")
	healed := AssignAvoiding(48, workers, after, nil)
	assert.Equal(t, Assign(48, workers, after), healed)
	lo, hi = spread(perThread(healed, workers))
	assert.Equal(t, 8, lo)
	assert.Equal(t, 8, hi)
}

// A slot every worker declines (a master down for all) is assigned as if
// nobody declined it: nothing moves.
func TestAssignAvoidingIgnoresASlotAllDecline(t *testing.T) {
	workers := []WorkerThreads{{"a", 1}, {"b", 1}}
	before := Assign(8, workers, nil)
	all := map[string][]int{"a": {1, 2}, "b": {1, 2}}
	assert.Equal(t, before, AssignAvoiding(8, workers, before, all))
	// A worker with no threads for the topic neither counts as accepting
	// nor has its declines read.
	assert.Equal(t, before, AssignAvoiding(8, append(workers, WorkerThreads{"c", 0}), before, all))
	// Declines of unknown workers, out-of-range slots and repeats change nothing.
	assert.Equal(t, before, AssignAvoiding(8, workers, before, map[string][]int{"x": {0}, "a": {-1, 8, 99}}))
}

// Random cases: no slot goes to a worker that declines it while another
// accepts it, every slot is assigned, a worker declining nothing stays
// within one of the others' counts, and the result is a fixed point.
func TestAssignAvoidingRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for n := range 2000 {
		slots := 1 + r.IntN(70)
		var workers []WorkerThreads
		for w := range 1 + r.IntN(5) {
			workers = append(workers, WorkerThreads{fmt.Sprintf("w%d", w), r.IntN(4)})
		}
		declined := map[string][]int{}
		for _, w := range workers {
			if r.IntN(2) == 0 {
				for range r.IntN(slots + 1) {
					declined[w.Worker] = append(declined[w.Worker], r.IntN(slots))
				}
			}
		}
		var prev []Owner
		if r.IntN(3) > 0 {
			prev = Assign(slots, workers[:1+r.IntN(len(workers))], nil)
		}
		out := AssignAvoiding(slots, workers, prev, declined)
		require.Len(t, out, slots)
		refused, _ := effectiveDeclines(slots, workers, declined)
		units := 0
		for _, w := range workers {
			units += w.Threads
		}
		for s, o := range out {
			if units == 0 {
				require.Equal(t, Owner{}, o, "case %d", n)
				continue
			}
			require.NotEqual(t, "", o.Worker, "case %d: slot %d unassigned", n, s)
			require.False(t, refused[o.Worker][s], "case %d: slot %d given to %s, which declines it", n, s, o.Worker)
		}
		require.Equal(t, out, AssignAvoiding(slots, workers, out, declined), "case %d: not a fixed point", n)
		if len(refused) == 0 {
			require.Equal(t, Assign(slots, workers, prev), out, "case %d", n)
		}
	}
}

func TestDeclinesSetSignalsChanges(t *testing.T) {
	d := NewDeclines()
	assert.False(t, d.Set("t", nil), "clearing nothing is no change")
	assert.True(t, d.Set("t", []int{3, 1, 3}))
	assert.Equal(t, map[string][]int{"t": {1, 3}}, d.All())
	select {
	case <-d.Changed():
	default:
		t.Fatal("a change was not signalled")
	}
	assert.False(t, d.Set("t", []int{1, 3}), "the same slots are no change")
	select {
	case <-d.Changed():
		t.Fatal("no change was signalled")
	default:
	}
	assert.True(t, d.Set("t", nil))
	assert.Empty(t, d.All())
	var none *Declines
	assert.Nil(t, none.All())
	assert.Nil(t, none.Changed())
	assert.Zero(t, none.Count("t"))
	assert.Nil(t, none.Of(func(string) bool { return true }))
}

// Of keeps the topics asked for, and Count counts one topic's slots.
func TestDeclinesOfAndCount(t *testing.T) {
	d := NewDeclines()
	d.Set("a", []int{2, 1})
	d.Set("b", []int{7})
	assert.Equal(t, map[string][]int{"a": {1, 2}}, d.Of(func(topic string) bool { return topic == "a" }))
	assert.Nil(t, d.Of(func(string) bool { return false }), "none kept: nil")
	assert.Equal(t, 2, d.Count("a"))
	assert.Equal(t, 1, d.Count("b"))
	assert.Zero(t, d.Count("c"))
	of := d.Of(func(string) bool { return true })
	of["a"][0] = 99
	assert.Equal(t, []int{1, 2}, d.All()["a"], "Of returns a copy")
}
