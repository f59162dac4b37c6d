package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

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

// givenUp is one slot's owner record that its holder gave up.
type givenUp struct {
	slot   int
	record string
}

// gaveUp returns the owner records of topic that its live holders (those
// true in alive) gave up (redisWorker.GaveUp), nil if none is live, and
// how long to wait for each live holder before claiming over it
// (patienceFor). A holder lists a record only once the slot's lease ended
// there, and never uses a listed record again: its slot stays held there
// until the record is written back, which ends the record.
func (r *redisRun) gaveUp(ctx context.Context, topic string, alive map[string]bool) (map[givenUp]bool, map[string]time.Duration, error) {
	live := false
	for _, a := range alive {
		live = live || a
	}
	if !live {
		return nil, nil, nil
	}
	if r.descs == nil { // once per reconcile
		descs, err := r.co.Workers(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("rmq: redis coordinator: read workers: %w", err)
		}
		r.descs = descs
	}
	descs := r.descs
	out := make(map[givenUp]bool)
	patience := make(map[string]time.Duration)
	for w, a := range alive {
		var d redisWorker
		if !a || json.Unmarshal([]byte(descs[w]), &d) != nil {
			continue
		}
		for slot, rec := range d.GaveUp[topic] {
			out[givenUp{slot, rec}] = true
		}
		patience[w] = r.patienceFor(d)
	}
	return out, patience, nil
}

// patienceFor is how long to wait for holder, a live worker described so,
// to release a slot assigned elsewhere before claiming over it: its lease
// of the slot stays valid up to its own drain timeout after it was told,
// and its heartbeat may come a lease TTL and an interval late (claim waits
// the longer of this and its own patience, for a holder that did not say).
func (r *redisRun) patienceFor(holder redisWorker) time.Duration {
	ttl := time.Duration(holder.TTL) * time.Millisecond
	return time.Duration(holder.Drain)*time.Millisecond + ttl + ttl/5
}
