package coordinator

import (
	"context"
	"time"

	"github.com/rmq-go/rmq/internal/wait"
)

// leave hands every slot back and leaves the group. It first tells the group
// it is leaving (the leader reassigns its slots, and their next owners wait
// for the releases), then revokes every lease and waits for the releases (up
// to the drain timeout, after which the slot is taken away from its
// consumer), writes the records back, and only then ends its membership:
// until then its records name a live worker, so nobody takes its slots
// before they are released.
func (r *redisRun) leave(ctx context.Context) {
	r.mu.Lock()
	r.leaving = true
	id := r.id
	r.mu.Unlock()
	if id == "" {
		return
	}
	if _, err := r.co.Join(ctx, id, r.cfg.LeaseTTL, r.describe(true), true); err != nil {
		r.log.Warn("rmq: redis coordinator: announcing the leave failed", "err", err)
	}
	if _, _, last, _ := r.state(); last.Leader == id {
		if err := r.lead(ctx, id, last.Version); err != nil {
			r.log.Warn("rmq: redis coordinator: reassigning before leaving failed", "err", err)
		}
	}
	var all []*redisHeld
	for _, t := range r.topics {
		for _, c := range t.held {
			if !wait.Closed(c.grant.Released()) {
				c.grant.Revoke()
				r.h.Revoked(c.grant.Lease())
			}
			all = append(all, c)
		}
	}
	deadline := time.NewTimer(r.m.DrainTimeout)
	defer deadline.Stop()
	late := false
	for _, c := range all {
		if !late {
			select {
			case <-c.grant.Released():
				continue
			case <-deadline.C:
			case <-r.m.Abandoned:
			}
			late = true
		}
		c.grant.Lose()
	}
	if late {
		// Given up on some listeners: what is left to write must not hang.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Second)
		defer cancel()
	}
	for _, t := range r.topics {
		var done []*redisHeld
		for _, c := range t.held {
			done = append(done, c)
		}
		if err := r.release(ctx, t, done); err != nil {
			r.log.Warn("rmq: redis coordinator: releasing slots failed; they move when the membership expires", "topic", t.Topic, "err", err)
		}
	}
	if err := r.co.Leave(ctx, id); err != nil {
		r.log.Warn("rmq: redis coordinator: leave failed; the slots move when the membership expires", "err", err)
		return
	}
	r.log.Info("rmq: redis coordinator: left", "id", id)
}
