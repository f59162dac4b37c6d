package coordinator

import (
	"cmp"
	"hash/fnv"
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

// threadUnits lists every thread of workers: the units of capacity an
// assignment spreads slots over, in the order that breaks its ties. Thread 0
// of every worker comes first, then thread 1, and so on, so that a topic
// with fewer slots than threads goes to as many workers as it can, not to
// one worker's threads; the workers by name, starting at one that topic's
// name picks (the first for ""), so that such topics do not all go to the
// same worker. A worker listed twice counts once, with the most threads it
// was listed with.
func threadUnits(topic string, workers []WorkerThreads) []Owner {
	threads := make(map[string]int, len(workers))
	most := 0
	for _, w := range workers {
		if w.Worker != "" {
			threads[w.Worker] = max(threads[w.Worker], w.Threads)
			most = max(most, w.Threads)
		}
	}
	names := slices.Sorted(maps.Keys(threads))
	if len(names) > 0 && topic != "" {
		h := fnv.New32a()
		h.Write([]byte(topic))
		k := int(h.Sum32() % uint32(len(names)))
		names = append(names[k:], names[:k]...)
	}
	var units []Owner
	for t := range most {
		for _, w := range names {
			if t < threads[w] {
				units = append(units, Owner{Worker: w, Thread: t})
			}
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
// Free slots go to one thread of each worker before a second thread of any
// (see AssignTopic to spread small topics over workers too).
func Assign(slots int, workers []WorkerThreads, prev []Owner) []Owner {
	return assign("", slots, workers, prev)
}

// assign is Assign with the units in topic's order (threadUnits).
func assign(topic string, slots int, workers []WorkerThreads, prev []Owner) []Owner {
	out := make([]Owner, slots)
	units := threadUnits(topic, workers)
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
	// hold the most now (fewest moves), ties in the units' order.
	order := make([]int, len(units))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(held[b], held[a]) })
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
