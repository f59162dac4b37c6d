package coordinator

import (
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
	return AssignTopic("", slots, workers, prev, declined)
}

// AssignTopic is AssignAvoiding for the slots of one topic: where threads
// tie, it starts from a worker the topic's name picks, so that topics with
// fewer slots than the workers' threads do not all go to the same workers.
// The coordinators' leaders assign with it.
func AssignTopic(topic string, slots int, workers []WorkerThreads, prev []Owner, declined map[string][]int) []Owner {
	refused, stuck := effectiveDeclines(slots, workers, declined)
	if len(refused) == 0 {
		return assign(topic, slots, workers, prev)
	}
	out := prev
	for range avoidRounds {
		a := newAvoider(topic, slots, workers, out, refused)
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
