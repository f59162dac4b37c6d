package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/rdb"
)

// holds returns the held slot's claim, nil if the slot is not held.
func (t *redisTopic) holds(slot int) *redisHeld {
	if slot < 0 || slot >= len(t.held) {
		return nil
	}
	return t.held[slot]
}

// eachHeld yields the held slots' claims in slot order (for range).
func (t *redisTopic) eachHeld(yield func(*redisHeld) bool) {
	for _, c := range t.held {
		if c != nil && !yield(c) {
			return
		}
	}
}

// wants reports whether the assignment gives slot to thread of worker id.
func (t *redisTopic) wants(id string, slot, thread int) bool {
	return slot < len(t.desired) && t.desired[slot] == Owner{Worker: id, Thread: thread}
}

// apply revokes the slots of t that move away, releases the records of
// released leases, and claims the slots assigned here. valid says whether
// this incarnation's leases hold now: only then are slots claimed.
func (r *redisRun) apply(ctx context.Context, t *redisTopic, id string, valid bool) error {
	now := time.Now()
	leaving := r.isLeaving()
	var done []*redisHeld // released leases whose records go back
	for c := range t.eachHeld {
		want := t.wants(id, c.slot, c.thread) && !leaving
		released := c.grant.IsReleased()
		switch {
		case c.unreleased > 0:
			// Its lease ended here; only the record is left to write back.
			if !now.Before(c.retryAt) {
				done = append(done, c)
			}
		case released:
			done = append(done, c)
		case c.moving && now.After(c.drainBy):
			// Its lease ended at drainBy (endBy) if the loop comes late.
			r.log.Warn("rmq: redis coordinator: slot not released within the drain timeout; taking it away",
				"topic", t.Topic, "slot", c.slot, "drain", r.m.DrainTimeout)
			c.grant.Lose()
			done = append(done, c)
		case lapsed(c.grant.Lease()):
			// Its deadline passed without a renewal (Redis unreachable, or an
			// assignment not applied): it is never extended again. Give it up
			// and the record back; the claim below takes the slot afresh if
			// it is still assigned here.
			c.grant.Lose()
			r.h.Revoked(c.grant.Lease())
			done = append(done, c)
		case !want && !c.moving:
			r.busy = true
			c.moving, c.drainBy = true, now.Add(r.m.DrainTimeout)
			r.endBy(c.grant, c.drainBy)
			c.grant.Revoke()
			r.h.Revoked(c.grant.Lease())
		case c.moving:
			r.busy = true
		}
	}
	if err := r.release(ctx, t, done); err != nil {
		return err
	}
	if !valid || r.isLeaving() {
		return nil
	}
	err := r.claim(ctx, t, id)
	return cmp.Or(err, r.disown(ctx, t, id))
}

// errDeclinedSlot is why a record of a declined slot is not written back.
var errDeclinedSlot = errors.New("its master is out of this worker's reach (declined)")

// releaseFailed keeps c, whose lease ended here, to write its record back
// later (after a pause of 50 ms doubling to the heartbeat interval; a
// declined slot's is not tried until the decline ends, release), and lists
// the record as given up, so that the next owner claims over it at once
// (gaveUp). It says so at Warn unless quiet: a release cut short by the
// Run's end is no incident, since the leave writes the record back.
func (r *redisRun) releaseFailed(t *redisTopic, c *redisHeld, err error, quiet bool) {
	if c.unreleased == 0 {
		r.describeDirty.Store(true) // the record is given up: say so (gaveUp)
		r.poke()
	}
	c.unreleased++
	c.retryAt = time.Now().Add(min(backoff.Redis.Delay(c.unreleased), r.interval()))
	if !quiet && (c.unreleased == 1 || c.unreleased%20 == 0 && err != errDeclinedSlot) {
		r.log.Warn("rmq: redis coordinator: a slot's record could not be written back; given up to its next owner",
			"topic", t.Topic, "slot", c.slot, "failures", c.unreleased, "err", err)
	}
}

// lapsed reports whether l's deadline passed (without its being lost or
// released).
func lapsed(l *Lease) bool {
	d := l.deadline.Load()
	return d != noDeadline && monoNow() >= d
}

// isLeaving reports whether Run is ending.
func (r *redisRun) isLeaving() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.leaving
}

// release writes back the records of held slots whose leases were released
// (their consumers stopped and settled) and announces it, so the next owner
// claims at once. A record that is no longer ours is left alone. A record
// that cannot be written back (its master out of reach) while others can
// stays held here, its lease over, and is tried again later (retryAt); the
// next owner takes it after its patience meanwhile (claim). A record of a
// slot this worker declines (Member.Declines: its master out of reach) is
// not tried until the decline ends, since a call into a partition waits out
// the client's timeouts.
func (r *redisRun) release(ctx context.Context, t *redisTopic, done []*redisHeld) error {
	tryNow := done[:0] // in place: the callers do not read done again
	for _, c := range done {
		if r.m.Declines.Has(t.Topic, c.slot) {
			r.releaseFailed(t, c, errDeclinedSlot, false)
			continue
		}
		tryNow = append(tryNow, c)
	}
	done = tryNow
	if len(done) == 0 {
		return nil
	}
	keys := make([]string, len(done))
	records := make([]string, len(done))
	for i, c := range done {
		keys[i], records[i] = t.keys[c.slot], c.record
	}
	err := r.co.Release(ctx, keys, records)
	failed := eachFailed(err, len(done))
	if err != nil && failed == nil {
		return fmt.Errorf("rmq: redis coordinator: release slots of %s: %w", t.Topic, err)
	}
	freed := 0
	for i, c := range done {
		if failed != nil && failed[i] != nil {
			r.releaseFailed(t, c, failed[i], ctx.Err() != nil)
			continue
		}
		if c.unreleased > 0 {
			r.describeDirty.Store(true) // no longer given up: written back
		}
		t.held[c.slot] = nil
		freed++
	}
	if freed == 0 {
		return nil
	}
	announce := func(ctx context.Context) error { return r.co.Announce(ctx, "free") }
	if err := r.homeCall(ctx, announce); err != nil && ctx.Err() == nil {
		r.log.Warn("rmq: redis coordinator: announcing released slots failed; the next owner finds them at its next look", "err", err)
	}
	return nil
}

// claim takes the slots assigned to this worker that it does not hold: those
// whose record is free, ours already, held by a worker whose membership
// expired (which is final), or given up by its live holder, whose lease ended
// where it could not write the record back (gaveUp). A slot held by a live
// worker is left until that worker releases it, or, should the release be
// lost, until the patience runs out, counted from when this worker first
// read that record (waited): by then the holder has either released the
// slot or its lease has ended (the drain timeout, endBy), and a heartbeat
// has passed.
func (r *redisRun) claim(ctx context.Context, t *redisTopic, id string) error {
	var slots []int
	for slot := range t.desired {
		if t.claimable(id, slot) && slot < len(t.held) && t.held[slot] == nil {
			slots = append(slots, slot)
		}
	}
	for slot := range t.waiting {
		if slot >= len(t.desired) || t.desired[slot].Worker != id || t.holds(slot) != nil {
			delete(t.waiting, slot)
		}
	}
	if len(slots) == 0 {
		return nil
	}
	keys := make([]string, len(slots))
	for i, s := range slots {
		keys[i] = t.keys[s]
	}
	records, err := r.co.Owners(ctx, keys)
	failed := eachFailed(err, len(keys)) // records of a master out of reach, say: claim the others
	var partly error                     // returned once the rest is claimed: the loop retries with backoff
	if err != nil {
		partly = fmt.Errorf("rmq: redis coordinator: read owners of %s: %w", t.Topic, err)
		if failed == nil {
			return partly
		}
	}
	holders := make([]string, 0)
	for i, rec := range records {
		if failed != nil && failed[i] != nil {
			slots[i] = -1 // not read: tried again at the next look
			continue
		}
		if h := holderOf(rec); h != "" && h != id {
			holders = append(holders, h)
		} else if h == id {
			// Claimed earlier by this incarnation, the reply lost: ours.
			r.hold(t, slots[i], rec)
			slots[i] = -1
		}
	}
	alive, err := r.liveness(ctx, holders)
	if err != nil {
		return err
	}
	gaveUp, patienceOf, err := r.gaveUp(ctx, t.Topic, alive)
	if err != nil {
		return err
	}
	now := time.Now()
	var claimKeys []string
	var claimSlots []int
	var expected []string
	for i, slot := range slots {
		if slot < 0 {
			continue
		}
		rec := records[i]
		if h := holderOf(rec); h != "" && alive[h] && !gaveUp[givenUp{slot, rec}] {
			w, ok := t.waiting[slot]
			if !ok || w.record != rec {
				w = waited{record: rec, since: now} // a new holder, or a new claim: its lease may have just begun
				t.waiting[slot] = w
			}
			if patience := max(r.patience(), patienceOf[h]); now.Sub(w.since) < patience {
				r.busy = true
				continue
			}
			r.log.Warn("rmq: redis coordinator: a live worker did not release a slot assigned elsewhere; taking it",
				"topic", t.Topic, "slot", slot, "holder", h, "waited", now.Sub(w.since))
		}
		claimKeys = append(claimKeys, t.keys[slot])
		claimSlots = append(claimSlots, slot)
		expected = append(expected, rec)
	}
	if len(claimKeys) == 0 {
		return partly
	}
	won, err := r.co.Claim(ctx, id, claimKeys, expected)
	if err != nil {
		failed := eachFailed(err, len(claimKeys))
		if failed == nil {
			for _, slot := range claimSlots {
				t.unsure[slot] = now // any of them may go through yet (redisunsure.go)
			}
			return fmt.Errorf("rmq: redis coordinator: claim slots of %s: %w", t.Topic, err)
		}
		// Not claimed as far as this worker knows; a claim that went through
		// all the same names this incarnation, and the next look holds it
		// (ours already, above), or hands it back if the slot was assigned
		// elsewhere meanwhile (redisunsure.go).
		for i, f := range failed {
			if f != nil {
				t.unsure[claimSlots[i]] = now
			}
		}
		partly = cmp.Or(partly, fmt.Errorf("rmq: redis coordinator: claim slots of %s: %w", t.Topic, err))
	}
	for i, rec := range won {
		if rec == "" {
			r.busy = true // the record changed meanwhile, or its master did not answer: look again
			continue
		}
		r.hold(t, claimSlots[i], rec)
	}
	return partly
}

// eachFailed returns the failure of each of n calls if err is an
// *rdb.EachError of n calls (some went through, others did not), else nil.
func eachFailed(err error, n int) []error {
	var each *rdb.EachError
	if !errors.As(err, &each) || len(each.Errs) != n {
		return nil
	}
	return each.Errs
}

// liveness returns which of holders are still members.
func (r *redisRun) liveness(ctx context.Context, holders []string) (map[string]bool, error) {
	out := make(map[string]bool, len(holders))
	if len(holders) == 0 {
		return out, nil
	}
	var ids []string
	for _, h := range holders {
		if _, seen := out[h]; !seen {
			out[h] = false
			ids = append(ids, h)
		}
	}
	flags, err := r.co.Alive(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("rmq: redis coordinator: read members: %w", err)
	}
	for i, id := range ids {
		out[id] = flags[i]
	}
	return out, nil
}

// hold records a claimed slot and hands its lease to the slot's thread.
func (r *redisRun) hold(t *redisTopic, slot int, record string) {
	delete(t.waiting, slot)
	delete(t.unsure, slot)
	c := &redisHeld{slot: slot, thread: t.desired[slot].Thread, record: record}
	l, g := NewLease(t.Topic, slot, c.thread, tokenOf(record))
	l.record = record
	c.grant = g
	r.mu.Lock()
	l.deadline.Store(r.leaseEnd)
	r.leases[g] = noDeadline
	r.mu.Unlock()
	t.held[slot] = c
	g.AfterRelease(func() { r.dropReleased(g) })
	r.h.Assigned(l)
}

// dropReleased drops a released lease from the live set and kicks the loop, unless
// the run has ended (Grant.AfterRelease).
func (r *redisRun) dropReleased(g *Grant) {
	select {
	case <-r.done:
		return
	default:
	}
	r.mu.Lock()
	delete(r.leases, g)
	r.mu.Unlock()
	r.poke()
}

// holderOf returns the worker id of an owner record ("" when released or none).
func holderOf(record string) string {
	_, h, _ := strings.Cut(record, ":")
	return h
}

// tokenOf returns the token of an owner record.
func tokenOf(record string) int64 {
	tok, _, _ := strings.Cut(record, ":")
	n, _ := strconv.ParseInt(tok, 10, 64)
	return n
}
