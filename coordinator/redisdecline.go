package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// declineGrace is how long a worker's decline of a slot must stand before
// the leader honours it. When a master is down for everyone, every worker
// finds it out within about a second of the others and declines its slots;
// a slot every worker declines stays where it is (AssignAvoiding), so the
// grace keeps the first to find out from handing its slots to workers
// about to decline them too.
const declineGrace = 2 * time.Second

// declineKey is one worker's decline of one slot.
type declineKey struct {
	worker, topic string
	slot          int
}

// declineBook is the leader's record of the declines it has seen: since
// when each has stood, and which it honours in the assignment under way.
type declineBook struct {
	since map[declineKey]time.Time
	seen  map[declineKey]bool
	now   time.Time
	ripe  map[string]map[string][]int // topic → worker → slots honoured now
	next  time.Time                   // when the earliest decline not yet honoured ripens
}

// begin starts a pass of the leader over the workers' descriptions.
func (b *declineBook) begin() *declineBook {
	if b.since == nil {
		b.since = make(map[declineKey]time.Time)
	}
	b.seen = make(map[declineKey]bool)
	b.ripe = make(map[string]map[string][]int)
	b.now, b.next = time.Now(), time.Time{}
	return b
}

// saw records that worker, a live member with threads for topic, declines
// slots of it.
func (b *declineBook) saw(worker, topic string, slots []int) {
	for _, s := range slots {
		k := declineKey{worker, topic, s}
		b.seen[k] = true
		since, ok := b.since[k]
		if !ok {
			since = b.now
			b.since[k] = since
		}
		if ripens := since.Add(declineGrace); b.now.Before(ripens) {
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

// end forgets the declines not seen in this pass (withdrawn, or of workers
// gone) and returns when the leader should look again for declines that
// ripen (zero: none waits).
func (b *declineBook) end() time.Time {
	for k := range b.since {
		if !b.seen[k] {
			delete(b.since, k)
		}
	}
	return b.next
}

// honoured returns the declines of topic that the assignment honours.
func (b *declineBook) honoured(topic string) map[string][]int { return b.ripe[topic] }

// leadDue reports whether a decline the last assignment did not yet honour
// has ripened since.
func (r *redisRun) leadDue() bool {
	return !r.leadAgain.IsZero() && !time.Now().Before(r.leadAgain)
}

// redescribe writes this worker's description again (its declines changed)
// unless it has not joined yet, in which case its join writes it.
func (r *redisRun) redescribe(ctx context.Context, id string) error {
	if id == "" || !r.describeDirty.Swap(false) {
		return nil
	}
	expiry, err := r.co.Join(ctx, id, r.cfg.LeaseTTL, r.describe(false), true)
	if err != nil {
		r.describeDirty.Store(true)
		return fmt.Errorf("rmq: redis coordinator: describe: %w", err)
	}
	if expiry < 0 {
		r.describeDirty.Store(true) // the membership expired: the next join describes
	}
	return nil
}

// gaveUp returns the owner records of topic that its live holders (those
// true in alive) gave up (redisWorker.GaveUp), nil if none is live. A
// holder lists a record only once the slot's lease ended there, and never
// uses a listed record again: its slot stays held there until the record
// is written back, which ends the record.
func (r *redisRun) gaveUp(ctx context.Context, topic string, alive map[string]bool) (map[string]bool, error) {
	live := false
	for _, a := range alive {
		live = live || a
	}
	if !live {
		return nil, nil
	}
	if r.descs == nil { // once per reconcile
		descs, err := r.co.Workers(ctx)
		if err != nil {
			return nil, fmt.Errorf("rmq: redis coordinator: read workers: %w", err)
		}
		r.descs = descs
	}
	descs := r.descs
	out := make(map[string]bool)
	for w, a := range alive {
		var d redisWorker
		if !a || json.Unmarshal([]byte(descs[w]), &d) != nil {
			continue
		}
		for _, rec := range d.GaveUp[topic] {
			out[rec] = true
		}
	}
	return out, nil
}
