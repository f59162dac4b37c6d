// Package declinebook is a coordinator leader's record of the workers'
// declines (coordinator.Declines): since when each has stood, and which
// the assignment honours now. The Redis and the ZooKeeper coordinators
// share it.
package declinebook

import "time"

// Grace is how long a worker's decline of a slot must stand before the
// leader honours it. When a master is down for everyone, every worker finds
// it out within about a second of the others and declines its slots; a slot
// every worker declines stays where it is (coordinator.AssignAvoiding), so
// the grace keeps the first to find out from handing its slots to workers
// about to decline them too.
const Grace = 2 * time.Second

// key is one worker's decline of one slot.
type key struct {
	worker, topic string
	slot          int
}

// Book is the leader's record of the declines it has seen. The zero value
// is ready; it is not safe for concurrent use.
type Book struct {
	since map[key]time.Time
	seen  map[key]bool
	now   time.Time
	ripe  map[string]map[string][]int // topic → worker → slots honoured now
	next  time.Time                   // when the earliest decline not yet honoured ripens
}

// Begin starts a pass of the leader over the workers' descriptions.
func (b *Book) Begin() *Book {
	if b.since == nil {
		b.since = make(map[key]time.Time)
	}
	b.seen = make(map[key]bool)
	b.ripe = make(map[string]map[string][]int)
	b.now, b.next = time.Now(), time.Time{}
	return b
}

// Saw records that worker, a live member with threads for topic, declines
// slots of it.
func (b *Book) Saw(worker, topic string, slots []int) {
	for _, s := range slots {
		k := key{worker, topic, s}
		b.seen[k] = true
		since, ok := b.since[k]
		if !ok {
			since = b.now
			b.since[k] = since
		}
		if ripens := since.Add(Grace); b.now.Before(ripens) {
			if b.next.IsZero() || ripens.Before(b.next) {
				b.next = ripens
			}
			continue
		}
		if b.ripe[topic] == nil {
			b.ripe[topic] = make(map[string][]int)
		}
		b.ripe[topic][worker] = append(b.ripe[topic][worker], s)
	}
}

// End forgets the declines not seen in this pass (withdrawn, or of workers
// gone) and returns when the leader should look again for declines that
// ripen (zero: none waits).
func (b *Book) End() time.Time {
	for k := range b.since {
		if !b.seen[k] {
			delete(b.since, k)
		}
	}
	return b.next
}

// Honoured returns the declines of topic that the assignment honours:
// worker → slots.
func (b *Book) Honoured(topic string) map[string][]int { return b.ripe[topic] }
