package coordinator

import (
	"context"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// leave hands every slot back and leaves the group. It first tells the group
// it is leaving (the leader reassigns its slots, and their next owners wait
// for the releases; a leaving leader does so itself and gives up the
// leader lease), then revokes every lease and writes each slot's record
// back as soon as its consumer released it (drain), so the next owner
// starts at once, and only then ends its membership: until then its records
// name a live worker, so nobody takes its slots before they are released.
// Its calls wait out a split of the coordinator's keys (whileMoving); once
// one call to the coordinator's master went unanswered, the rest of the
// leave's calls there are not tried (homeCall).
func (r *redisRun) leave(ctx context.Context) {
	r.mu.Lock()
	r.leaving = true
	id := r.id
	r.mu.Unlock()
	if id == "" {
		if tried := r.joinTried; tried != "" {
			// A join whose reply did not come may have made the member,
			// which the leader then gives slots nobody serves: end it.
			if err := r.leaveStep(ctx, func(ctx context.Context) error { return r.co.Leave(ctx, tried) })(); err != nil {
				r.log.Warn("rmq: redis coordinator: ending a join of unknown outcome failed; it expires a lease TTL after it was made", "id", tried, "err", err)
			}
		}
		return
	}
	var moves rdb.SlotMoves // one row for the leave's calls: the membership lapses a lease TTL into a split anyway
	announce := r.leaveStep(ctx, func(ctx context.Context) error {
		_, err := r.co.Join(ctx, id, r.cfg.LeaseTTL, r.describe(true), true)
		return err
	})
	if err := r.whileMoving(ctx, "leave", &moves, announce); err != nil {
		r.log.Warn("rmq: redis coordinator: announcing the leave failed", "err", err)
	}
	if _, _, last, _ := r.state(); last.Leader == id {
		reassign := r.leaveStep(ctx, func(ctx context.Context) error { return r.lead(ctx, id, last.Version) })
		if err := r.whileMoving(ctx, "leave", &moves, reassign); err != nil {
			r.log.Warn("rmq: redis coordinator: reassigning before leaving failed", "err", err)
		}
		// Give the leader lease up now (a leaving worker's heartbeat does),
		// not when the membership ends: a worker joining or dying during
		// the drain is then assigned around by the next leader at once.
		r.beatSoon()
	}
	var all []heldSlot
	drainBy := time.Now().Add(r.m.DrainTimeout)
	for _, t := range r.topics {
		for c := range t.eachHeld {
			if !c.grant.IsReleased() {
				r.endBy(c.grant, drainBy)
				c.grant.Revoke()
				r.h.Revoked(c.grant.Lease())
			}
			all = append(all, heldSlot{t, c})
		}
	}
	r.mu.Lock()
	r.revokedAll = true
	r.mu.Unlock()
	ctx, cancel := r.drain(ctx, all)
	defer cancel()
	end := r.leaveStep(ctx, func(ctx context.Context) error { return r.co.Leave(ctx, id) })
	if err := r.whileMoving(ctx, "leave", &moves, end); err != nil {
		r.log.Warn("rmq: redis coordinator: leave failed; the slots move when the membership expires", "err", err)
		return
	}
	r.log.Info("rmq: redis coordinator: left", "id", id)
}

// leaveCallWait bounds how long go-redis may retry one step of the leave
// (its announcement, its reassignment, each release, the end of the
// membership). go-redis stops retrying and dialling at a ctx's deadline
// (and reading too with ContextTimeoutEnabled), so a coordinator master out
// of reach costs a step at most this plus one ReadTimeout, where its
// retries took about 20 s with go-redis's defaults. What a step could not
// tell the group, the membership's expiry does; a split of the
// coordinator's keys is still waited out between steps (whileMoving).
const leaveCallWait = time.Second

// within runs call with ctx bounded by d.
func within(ctx context.Context, d time.Duration, call func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return call(ctx)
}

// leaveStep returns call, a call to the coordinator's master, as a step of
// the leave for whileMoving: each try within leaveCallWait of ctx, and none
// once the master left one unanswered (homeCall).
func (r *redisRun) leaveStep(ctx context.Context, call func(ctx context.Context) error) func() error {
	return func() error {
		return r.homeCall(ctx, func(ctx context.Context) error { return within(ctx, leaveCallWait, call) })
	}
}

// heldSlot is a held slot with its topic.
type heldSlot struct {
	t *redisTopic
	c *redisHeld
}

// releasePoll is how often a leaving worker looks for leases its consumers
// released, to hand their slots back.
const releasePoll = 5 * time.Millisecond

// drain writes back the record of each slot of all as soon as its lease is
// released. Once the drain timeout passes (or the client abandons its
// listeners) the rest are taken away from their consumers and written back
// at once. It returns the context for what is left to write: bounded by a
// second once listeners were given up on, so that nothing hangs.
func (r *redisRun) drain(ctx context.Context, all []heldSlot) (context.Context, context.CancelFunc) {
	deadline := time.NewTimer(r.m.DrainTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(releasePoll)
	defer poll.Stop()
	late := false
	cancel := func() {}
	for len(all) > 0 {
		rest := all[:0]
		done := make(map[*redisTopic][]*redisHeld)
		for _, h := range all {
			if late {
				h.c.grant.Lose()
			}
			if h.c.grant.IsReleased() || late {
				done[h.t] = append(done[h.t], h.c)
			} else {
				rest = append(rest, h)
			}
		}
		for t, cs := range done {
			err := within(ctx, leaveCallWait, func(ctx context.Context) error { return r.release(ctx, t, cs) })
			if err != nil {
				r.log.Warn("rmq: redis coordinator: releasing slots failed; they move when the membership expires", "topic", t.Topic, "err", err)
			}
		}
		all = rest
		if len(all) == 0 || late {
			break
		}
		select {
		case <-poll.C:
		case <-deadline.C:
			late = true
		case <-r.m.Abandoned:
			late = true
		}
		if late {
			// Given up on some listeners: what is left to write must not hang.
			ctx, cancel = context.WithTimeout(ctx, leaveCallWait)
		}
	}
	return ctx, cancel
}
