package coordinator

import (
	"cmp"
	"slices"
	"sync"
)

// Declines is what a process cannot serve now: per topic, the slots whose
// data it cannot reach (a Cluster master cut off from it alone, say). The
// process sets it; a coordinator that honours it (DeclineHonourer) tells
// the group, and its assignment moves those slots to processes that do not
// decline them, while any such process exists. Safe for concurrent use; the
// zero value is not ready, use NewDeclines.
type Declines struct {
	mu      sync.Mutex
	slots   map[string][]int
	changed chan struct{} // capacity 1
}

// NewDeclines returns an empty Declines.
func NewDeclines() *Declines {
	return &Declines{slots: make(map[string][]int), changed: make(chan struct{}, 1)}
}

// Set replaces the slots of topic declined (nil or empty: none) and reports
// whether that changed anything; a change is signalled on Changed.
func (d *Declines) Set(topic string, slots []int) bool {
	s := slices.Clone(slots)
	slices.Sort(s)
	s = slices.Compact(s)
	d.mu.Lock()
	defer d.mu.Unlock()
	if slices.Equal(d.slots[topic], s) {
		return false
	}
	if len(s) == 0 {
		delete(d.slots, topic)
	} else {
		d.slots[topic] = s
	}
	signal(d.changed)
	return true
}

// Has reports whether slot of topic is declined (false on a nil Declines).
func (d *Declines) Has(topic string, slot int) bool {
	if d == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	_, found := slices.BinarySearch(d.slots[topic], slot)
	return found
}

// Count returns how many slots of topic are declined (0 on a nil Declines).
func (d *Declines) Count(topic string) int {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.slots[topic])
}

// All returns a copy of every topic's declined slots (nil on a nil
// Declines).
func (d *Declines) All() map[string][]int {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string][]int, len(d.slots))
	for t, s := range d.slots {
		out[t] = slices.Clone(s)
	}
	return out
}

// Of returns a copy of the declined slots of the topics keep accepts (nil
// if none, or on a nil Declines): what a worker tells its coordinator.
func (d *Declines) Of(keep func(topic string) bool) map[string][]int {
	var out map[string][]int
	for topic, slots := range d.All() {
		if len(slots) > 0 && keep(topic) {
			if out == nil {
				out = make(map[string][]int)
			}
			out[topic] = slots
		}
	}
	return out
}

// Changed receives a value after Set changed the declines (nil on a nil
// Declines, which never changes).
func (d *Declines) Changed() <-chan struct{} {
	if d == nil {
		return nil
	}
	return d.changed
}

// DeclineHonourer is implemented by coordinators whose assignment honours
// Member.Declines. A process need not find out what it cannot reach for a
// coordinator that would not use it.
type DeclineHonourer interface {
	HonoursDeclines() bool
}

// AssignAvoiding is Assign for workers that decline some slots (declined:
// worker → the slots it cannot serve now). A declined slot neither stays
// with nor goes to a worker that declines it, while some worker with
// threads does not; a slot every such worker declines is assigned as if
// nobody did, and moves only when no other slot can. Shares are Assign's; a
// declined slot that only threads at their share may take goes to its
// previous owner among them, else to the one holding the fewest, and a
// thread left below its share takes slots it accepts from threads above
// theirs, along a chain of threads that pass one on where need be. Where
// the declines leave a thread short of the extra slot its rank gave it,
// that slot goes to a thread that can take it: the result is balanced
// (every thread slots/threads or one more) whenever some assignment that
// honours the declines is. With no slot declined it is Assign.
// Like Assign it is a pure function, and given its own result as prev it
// returns that result again.
func AssignAvoiding(slots int, workers []WorkerThreads, prev []Owner, declined map[string][]int) []Owner {
	refused, stuck := effectiveDeclines(slots, workers, declined)
	if len(refused) == 0 {
		return Assign(slots, workers, prev)
	}
	out := prev
	for range avoidRounds {
		a := newAvoider(slots, workers, out, refused)
		if a != nil {
			a.stuck = stuck
		}
		if a == nil {
			return make([]Owner, slots)
		}
		next := a.assign()
		if slices.Equal(next, out) {
			break
		}
		out = next
	}
	return out
}

// avoidRounds bounds the rounds of AssignAvoiding: each takes the last
// one's result as prev, until one changes nothing (the shares' ranks follow
// what each thread holds, so a first round can leave a thread one slot
// above a share that the next round ranks anew).
const avoidRounds = 8

// effectiveDeclines returns, per worker with threads, the set of slots it
// declines that some other worker with threads accepts (nil if none), and
// the slots every worker with threads declines (stuck: best left where they
// are, a master nobody reaches).
func effectiveDeclines(slots int, workers []WorkerThreads, declined map[string][]int) (map[string]map[int]bool, map[int]bool) {
	live := make(map[string]bool, len(workers))
	for _, w := range workers {
		if w.Worker != "" && w.Threads > 0 {
			live[w.Worker] = true
		}
	}
	decliners := make(map[int]int) // slot → how many live workers decline it
	sets := make(map[string]map[int]bool)
	for w, ss := range declined {
		if !live[w] {
			continue
		}
		set := make(map[int]bool, len(ss))
		for _, s := range ss {
			if s >= 0 && s < slots && !set[s] {
				set[s] = true
				decliners[s]++
			}
		}
		sets[w] = set
	}
	var out map[string]map[int]bool
	var stuck map[int]bool
	for s, n := range decliners {
		if n == len(live) {
			if stuck == nil {
				stuck = make(map[int]bool)
			}
			stuck[s] = true
		}
	}
	for w, set := range sets {
		for s := range set {
			if decliners[s] < len(live) {
				if out == nil {
					out = make(map[string]map[int]bool)
				}
				if out[w] == nil {
					out[w] = make(map[int]bool)
				}
				out[w][s] = true
			}
		}
	}
	return out, stuck
}

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

func newAvoider(slots int, workers []WorkerThreads, prev []Owner, refused map[string]map[int]bool) *avoider {
	a := &avoider{slots: slots, refused: refused, prev: prev, index: make(map[Owner]int), out: make([]Owner, slots),
		units: threadUnits(workers)}
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
