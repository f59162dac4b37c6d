package coordinator

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/rdb"
)

// heartbeat renews the membership every interval, and sooner when the
// leader lease or another member is due to expire (so that a dead leader or
// member is replaced as soon as Redis lets go of it), until ctx ends.
//
// A heartbeat refused while the coordinator's hash slot moves is tried again
// soon and logged at Debug, at Warn once such refusals have lasted half the
// lease TTL, when the leases are at risk (slotmoves.go). Other failures are
// logged at Warn the first time and every 20th in a row, and at Info once a
// heartbeat works again.
func (r *redisRun) heartbeat(ctx context.Context) {
	failures := 0
	var moves rdb.SlotMoves
	for {
		wait := r.interval()
		if id, _, _, _ := r.state(); id != "" {
			var err error
			wait, err = r.beatOnce(ctx, id)
			if err == nil {
				if failures > 0 && ctx.Err() == nil {
					r.log.Info("rmq: redis coordinator: heartbeat works again", "failures", failures)
				}
				failures = 0
				moves.Reset()
			} else if pause, ok := r.slotMoving("heartbeat", &moves, err); ok {
				wait = pause
			} else {
				moves.Reset()
				failures++
				wait = min(backoff.Redis.Delay(failures), r.interval())
				if (failures == 1 || failures%20 == 0) && ctx.Err() == nil {
					// Once the leases are at risk, and not once per try:
					// each is a fifth of the TTL apart (100 lines in a
					// minute's outage with a 3 s TTL).
					r.log.Warn("rmq: redis coordinator: heartbeat failed; retrying", "failures", failures, "err", err)
				}
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-r.beat:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// beatOnce renews id's membership. On success, if the loop has applied the
// assignment epoch the renewal reports, it extends every lease to the
// send time of a confirmed renewal plus the TTL minus the margin, a revoked
// one no further than its drain deadline (endBy): Redis set
// the expiry to its own time when it ran the renewal, after its send, plus
// the TTL, so the lease ends here before Redis could let another worker take
// a slot. The renewal counted is the latest one sent at least replicaLag
// before the newest, so that a failover that loses the writes of the last
// moments before it (asynchronous replication) cannot make Redis expire the
// membership before the lease ends here. It returns when to beat next, or
// the renewal's failure.
func (r *redisRun) beatOnce(ctx context.Context, id string) (time.Duration, error) {
	r.mu.Lock()
	lead := !r.leaving
	r.mu.Unlock()
	sent := monoNow()
	b, err := r.co.Heartbeat(ctx, id, r.cfg.LeaseTTL, lead)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	if r.id != id {
		r.mu.Unlock()
		return r.interval(), nil // a new incarnation meanwhile
	}
	if b.ExpiryMs < 0 {
		r.expired = true
		r.mu.Unlock()
		r.poke()
		return r.interval(), nil
	}
	end := r.renewals.settled(sent, int64(r.replicaLag())) + int64(r.cfg.LeaseTTL-r.margin())
	if end > r.leaseEnd && (b.Epoch == r.applied || r.revokedAll) {
		// Only a worker that applied the latest assignment keeps its leases:
		// one that has not (Redis failing the read, the loop held in a call)
		// lets them run out, so a slot it should have handed over is never
		// served twice, even when the new owner takes it after its patience.
		// (Applying revokes what moves away before any call to Redis can
		// fail: reconcile.) A lease that ran out stays out (another worker
		// may hold its slot by now): the loop gives it up and claims the
		// slot afresh if it is still assigned here (lapsed in redisslots.go).
		// A revoked lease is never extended past its drain deadline (endBy):
		// a leaving worker's leases are all revoked (revokedAll), and go on
		// while their listeners finish, the leave's own announcement having
		// brought a new assignment it never applies.
		r.leaseEnd = end
		now := monoNow()
		for g, by := range r.leases {
			if g.l.deadline.Load() > now {
				g.l.deadline.Store(min(end, by))
			}
		}
	}
	news := b.Epoch != r.last.Epoch || b.Version != r.last.Version || b.Leader != r.last.Leader
	r.last = b
	r.mu.Unlock()
	if news {
		r.poke()
	}
	next := r.interval()
	switch {
	case b.Leader == id && b.NextExpiry > 0:
		next = min(next, time.Duration(b.NextExpiry-b.NowMs)*time.Millisecond+expiryGrace)
	case b.Leader != id && b.LeaderLeft > 0 && lead:
		next = min(next, b.LeaderLeft+expiryGrace)
	}
	return max(next, expiryGrace), nil
}

// endBy makes g's lease, revoked, end at by at the latest: the heartbeat
// extends it no further, so it ends at its drain deadline even while the
// loop, which takes it away then, is held in a call. The next owner's
// patience counts on that.
func (r *redisRun) endBy(g *Grant, by time.Time) {
	end := int64(by.Sub(clockBase))
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, ok := r.leases[g]
	if !ok {
		return // released
	}
	end = min(end, prev) // revoked before (a slot moving when Run ends): the earlier deadline stands
	r.leases[g] = end
	if g.l.deadline.Load() > end {
		g.l.deadline.Store(end)
	}
}

// expiryGrace is how long after an expiry is due by the Redis clock the
// heartbeat that acts on it goes out.
const expiryGrace = 10 * time.Millisecond

// listen follows the coordinator's channel until ctx ends. A subscription
// (or a resubscription after a reconnect, across which messages are lost)
// makes the loop read everything again. What it does is safe from two
// goroutines at once (Coordination.Listen on a Cluster).
func (r *redisRun) listen(ctx context.Context) {
	r.co.Listen(ctx, func(m any) {
		switch m := m.(type) {
		case *redis.Subscription:
			r.assignDirty.Store(true)
			r.leadDirty.Store(true)
			r.beatSoon()
			r.poke()
		case *redis.Message:
			switch m.Payload {
			case "members":
				r.leadDirty.Store(true)
				r.beatSoon() // a leader may have left: take the lease
			case "epoch":
				r.assignDirty.Store(true)
			}
			r.poke()
		}
	})
}

// replicaLag bounds how far behind its master a replica may be, for the lease
// arithmetic: a twentieth of the TTL (500ms by default). Replicas lag by
// milliseconds unless something is badly wrong.
func (r *redisRun) replicaLag() time.Duration { return r.cfg.LeaseTTL / 20 }

// renewals remembers the send times of the latest confirmed renewals.
type renewals struct {
	sent [8]int64 // monotonic ns, newest at next-1 (mod 8)
	next int
	n    int
}

// reset forgets every renewal but the join, sent at sent.
func (rs *renewals) reset(sent int64) {
	*rs = renewals{}
	rs.add(sent)
}

func (rs *renewals) add(sent int64) {
	rs.sent[rs.next] = sent
	rs.next = (rs.next + 1) % len(rs.sent)
	rs.n = min(rs.n+1, len(rs.sent))
}

// settled records a renewal confirmed now that was sent at sent, and returns
// the send time of the latest renewal sent at least lag before it; if none
// is that old, the oldest remembered minus lag, which extends nothing.
func (rs *renewals) settled(sent, lag int64) int64 {
	rs.add(sent)
	best := int64(-1 << 63)
	oldest := sent
	for i := range rs.n {
		s := rs.sent[i]
		oldest = min(oldest, s)
		if s <= sent-lag {
			best = max(best, s)
		}
	}
	if best == -1<<63 {
		return oldest - lag
	}
	return best
}
