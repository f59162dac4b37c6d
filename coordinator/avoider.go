package coordinator

import (
	"cmp"
	"slices"
)

// avoider is one run of AssignAvoiding.
type avoider struct {
	slots   int
	units   []Owner
	order   []int // units by rank: those holding the most first
	share   []int
	refused map[string]map[int]bool
	prev    []Owner
	index   map[Owner]int
	out     []Owner
	count   []int        // slots held by each unit in out
	stuck   map[int]bool // slots every worker declines: moved only when nothing else can be
}

func newAvoider(topic string, slots int, workers []WorkerThreads, prev []Owner, refused map[string]map[int]bool) *avoider {
	a := &avoider{slots: slots, refused: refused, prev: prev, index: make(map[Owner]int), out: make([]Owner, slots),
		units: threadUnits(topic, workers)}
	for i, u := range a.units {
		a.index[u] = i
	}
	if len(a.units) == 0 || slots == 0 {
		return nil
	}
	held := make([]int, len(a.units))
	for s := range min(slots, len(prev)) {
		if i, ok := a.index[prev[s]]; ok {
			held[i]++
		}
	}
	a.order = make([]int, len(a.units))
	for i := range a.order {
		a.order[i] = i
	}
	slices.SortStableFunc(a.order, func(x, y int) int { return cmp.Compare(held[y], held[x]) })
	base, extra := slots/len(a.units), slots%len(a.units)
	a.share = make([]int, len(a.units))
	for rank, i := range a.order {
		a.share[i] = base
		if rank < extra {
			a.share[i]++
		}
	}
	a.count = make([]int, len(a.units))
	return a
}

// refuses reports whether unit i may not hold slot s.
func (a *avoider) refuses(i, s int) bool { return a.refused[a.units[i].Worker][s] }

// constrained reports whether some worker refuses s.
func (a *avoider) constrained(s int) bool {
	for _, set := range a.refused {
		if set[s] {
			return true
		}
	}
	return false
}

// slotOrder lists the slots refused by some worker first (they have fewer
// places to go), each group in slot order.
func (a *avoider) slotOrder() []int {
	var first, rest []int
	for s := range a.slots {
		if a.constrained(s) {
			first = append(first, s)
		} else {
			rest = append(rest, s)
		}
	}
	return append(first, rest...)
}

func (a *avoider) put(s, i int) {
	a.out[s] = a.units[i]
	a.count[i]++
}

func (a *avoider) assign() []Owner {
	var free []int
	for _, s := range a.slotOrder() {
		if s < len(a.prev) {
			if i, ok := a.index[a.prev[s]]; ok && a.count[i] < a.share[i] && !a.refuses(i, s) {
				a.put(s, i)
				continue
			}
		}
		free = append(free, s)
	}
	for _, s := range free {
		a.put(s, a.place(s))
	}
	a.rebalance()
	return a.out
}

// place picks the unit for a free slot: the first by rank below its share
// that accepts it; else, among those that accept it, its previous owner,
// else the one holding the fewest.
func (a *avoider) place(s int) int {
	for _, i := range a.order {
		if a.count[i] < a.share[i] && !a.refuses(i, s) {
			return i
		}
	}
	if s < len(a.prev) {
		if i, ok := a.index[a.prev[s]]; ok && !a.refuses(i, s) {
			return i
		}
	}
	best := -1
	for _, i := range a.order {
		if !a.refuses(i, s) && (best < 0 || a.count[i] < a.count[best]) {
			best = i
		}
	}
	return best // some unit accepts s: effectiveDeclines keeps no slot refused by all
}

// rebalance gives each unit below its share slots it accepts from units
// above theirs: straight from one, or along a chain of units at their share
// that each pass one slot on (rebalanceOnce), until none is left below its
// share that could gain one. Then, where declines leave a unit short of the
// share its rank gave it, the one extra slot a share may hold goes to units
// that can take it: no unit below base (slots/units) while another holds
// more, none above base+1 while another holds base. A slot every worker
// declines moves only when no other slot can.
func (a *avoider) rebalance() {
	base := a.slots / len(a.units)
	aboveShare := func(y int) bool { return a.count[y] > a.share[y] }
	aboveBase := func(y int) bool { return a.count[y] > base }
	aboveMax := func(y int) bool { return a.count[y] > base+1 }
	held := make([][]int, len(a.units)) // each unit's slots, highest first
	for s := a.slots - 1; s >= 0; s-- {
		if i, ok := a.index[a.out[s]]; ok {
			held[i] = append(held[i], s)
		}
	}
	for _, pass := range []struct {
		below func(i int) bool
		above func(y int) bool
	}{
		{func(i int) bool { return a.count[i] < a.share[i] }, aboveShare},
		{func(i int) bool { return a.count[i] < base }, aboveBase},
		{func(i int) bool { return a.count[i] <= base }, aboveMax},
	} {
		for _, low := range a.order {
			for pass.below(low) {
				if !a.rebalanceOnce(held, low, false, pass.above) && !a.rebalanceOnce(held, low, true, pass.above) {
					break
				}
			}
		}
	}
}

// rebalanceOnce finds the shortest chain low ← u1 ← … ← uk, in which each
// unit takes a slot it accepts from the next and above(uk) holds, and moves
// its slots (low gains one, uk loses one, the others keep their count): a
// breadth-first search over units, each unit's slots highest first, units in
// rank order. stuckToo lets it move slots every worker declines. It reports
// whether it found one; held (each unit's slots, highest first) follows the
// moves.
func (a *avoider) rebalanceOnce(held [][]int, low int, stuckToo bool, above func(y int) bool) bool {
	type hop struct{ to, slot int } // the unit that takes slot from this one
	via := make([]hop, len(a.units))
	seen := make([]bool, len(a.units))
	seen[low] = true
	queue := []int{low}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		for _, y := range a.order {
			if seen[y] {
				continue
			}
			for _, s := range held[y] {
				if a.refuses(x, s) || (a.stuck[s] && !stuckToo) {
					continue
				}
				seen[y], via[y] = true, hop{to: x, slot: s}
				if above(y) {
					for from := y; from != low; from = via[from].to {
						h := via[from]
						a.count[from]--
						a.put(h.slot, h.to)
						held[from] = slices.DeleteFunc(held[from], func(s int) bool { return s == h.slot })
						at, _ := slices.BinarySearchFunc(held[h.to], h.slot, func(e, t int) int { return cmp.Compare(t, e) })
						held[h.to] = slices.Insert(held[h.to], at, h.slot)
					}
					return true
				}
				queue = append(queue, y)
				break
			}
		}
	}
	return false
}
