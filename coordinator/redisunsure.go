package coordinator

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Claims of unknown outcome. A claim whose reply did not come (its master
// slow or out of reach: rdb.ErrUnanswered after MasterWait, a timeout, a
// broken connection) may still go through later, when its master reads it.
// If the slot is still assigned here, the next look finds the record naming
// this incarnation and holds the slot (claim). If the slot was assigned
// elsewhere meanwhile, the record names a live worker that neither holds
// the slot nor is assigned it, and the slot's next owner would wait out its
// patience before claiming over it: the drain timeout, the lease TTL and a
// heartbeat, during which nobody consumes the slot.
//
// So the slots of such claims are remembered (redisTopic.unsure), and at
// each look the records of those no longer assigned here are read. One that
// names this incarnation is handed back (released, and announced), and the
// next owner claims it at once. A slot is forgotten once its record is held
// or handed back, or once the patience has passed since its last claim of
// unknown outcome: by then the next owner claims over the record anyway.

// patience is how long a slot's assigned owner waits for a live holder to
// release it before it claims over the holder's record (claim).
func (r *redisRun) patience() time.Duration {
	return r.m.DrainTimeout + r.cfg.LeaseTTL + r.interval()
}

// claimable reports whether the assignment gives slot to a thread of worker
// id that exists: the slots claim takes.
func (t *redisTopic) claimable(id string, slot int) bool {
	return slot < len(t.desired) && t.desired[slot].Worker == id && t.desired[slot].Thread < max(t.Threads, 1)
}

// disown hands back the records that claims of unknown outcome (unsure)
// left naming this incarnation, of slots no longer assigned here. A slot
// this worker declines (its master out of its reach) is not looked at, since
// a call into a partition waits out the client's timeouts; its next owner
// takes it after its patience, as before.
func (r *redisRun) disown(ctx context.Context, t *redisTopic, id string) error {
	if len(t.unsure) == 0 {
		return nil
	}
	now, patience := time.Now(), r.patience()
	var slots []int
	for slot, since := range t.unsure {
		switch {
		case t.holds(slot) != nil || now.Sub(since) >= patience:
			delete(t.unsure, slot)
		case !t.claimable(id, slot) && !r.m.Declines.Has(t.Topic, slot):
			slots = append(slots, slot)
		}
	}
	if len(slots) == 0 {
		return nil
	}
	slices.Sort(slots)
	keys := make([]string, len(slots))
	for i, s := range slots {
		keys[i] = t.keys[s]
	}
	records, err := r.co.Owners(ctx, keys)
	failed := eachFailed(err, len(keys)) // the others are looked at again at the next look
	if err != nil && failed == nil {
		return fmt.Errorf("rmq: redis coordinator: read owners of %s: %w", t.Topic, err)
	}
	var ours []int
	var ourKeys, ourRecords []string
	for i, rec := range records {
		if (failed == nil || failed[i] == nil) && holderOf(rec) == id {
			ours = append(ours, slots[i])
			ourKeys, ourRecords = append(ourKeys, keys[i]), append(ourRecords, rec)
		}
	}
	if len(ours) == 0 {
		return nil
	}
	err = r.co.Release(ctx, ourKeys, ourRecords)
	failed = eachFailed(err, len(ours))
	if err != nil && failed == nil {
		return fmt.Errorf("rmq: redis coordinator: hand back slots of %s: %w", t.Topic, err)
	}
	var freed []int
	for i, slot := range ours {
		if failed == nil || failed[i] == nil {
			delete(t.unsure, slot)
			freed = append(freed, slot)
		}
	}
	if len(freed) == 0 {
		return nil
	}
	r.log.Info("rmq: redis coordinator: handed back slots that a late claim took after they were assigned elsewhere",
		"topic", t.Topic, "slots", freed)
	announce := func(ctx context.Context) error { return r.co.Announce(ctx, "free") }
	if err := r.homeCall(ctx, announce); err != nil && ctx.Err() == nil {
		r.log.Warn("rmq: redis coordinator: announcing handed-back slots failed; the next owner finds them at its next look", "err", err)
	}
	return nil
}
