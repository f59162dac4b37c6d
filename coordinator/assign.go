package coordinator

import (
	"cmp"
	"maps"
	"slices"
)

// Owner is the thread that consumes a slot: Worker "" means none.
type Owner struct {
	Worker string
	Thread int
}

// WorkerThreads is one worker's thread count for a topic.
type WorkerThreads struct {
	Worker  string
	Threads int
}

// threadUnits lists every thread of workers, by worker and thread: the units
// of capacity an assignment spreads slots over. A worker listed twice
// counts once, with the most threads it was listed with.
func threadUnits(workers []WorkerThreads) []Owner {
	threads := make(map[string]int, len(workers))
	for _, w := range workers {
		if w.Worker != "" {
			threads[w.Worker] = max(threads[w.Worker], w.Threads)
		}
	}
	var units []Owner
	for _, w := range slices.Sorted(maps.Keys(threads)) {
		for t := range threads[w] {
			units = append(units, Owner{Worker: w, Thread: t})
		}
	}
	return units
}

// Assign spreads slots over the threads of workers. Every thread is one unit
// of capacity, so a worker's share is proportional to its threads and the
// slot counts of any two threads differ by at most one. It is sticky: a slot
// stays with its previous owner (prev, indexed by slot; shorter or nil is
// fine) while that thread exists and is within its share, so a join or leave
// moves only slots that must move. The result is a pure function of its
// inputs (worker order does not matter), so every worker computing it agrees.
func Assign(slots int, workers []WorkerThreads, prev []Owner) []Owner {
	out := make([]Owner, slots)
	units := threadUnits(workers)
	if len(units) == 0 || slots == 0 {
		return out
	}
	index := make(map[Owner]int, len(units))
	for i, u := range units {
		index[u] = i
	}
	// How many slots each unit holds now.
	held := make([]int, len(units))
	for s := range min(slots, len(prev)) {
		if i, ok := index[prev[s]]; ok {
			held[i]++
		}
	}
	// Shares: base each, one more for the first `extra` units, those that
	// hold the most now (fewest moves), ties by worker and thread.
	order := make([]int, len(units))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(held[b], held[a]), cmp.Compare(units[a].Worker, units[b].Worker),
			cmp.Compare(units[a].Thread, units[b].Thread))
	})
	base, extra := slots/len(units), slots%len(units)
	share := make([]int, len(units))
	for rank, i := range order {
		share[i] = base
		if rank < extra {
			share[i]++
		}
	}
	// Keep what may stay, lowest slots first.
	kept := make([]int, len(units))
	var free []int
	for s := range slots {
		if s < len(prev) {
			if i, ok := index[prev[s]]; ok && kept[i] < share[i] {
				kept[i]++
				out[s] = units[i]
				continue
			}
		}
		free = append(free, s)
	}
	// Hand out the rest to units below their share, in unit order.
	u := 0
	for _, s := range free {
		for kept[order[u]] >= share[order[u]] {
			u++
		}
		i := order[u]
		kept[i]++
		out[s] = units[i]
	}
	return out
}
