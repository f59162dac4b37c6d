package coordinator

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/backoff"
)

// heartbeat renews the membership every interval, and sooner when the
// leader lease or another member is due to expire (so that a dead leader or
// member is replaced as soon as Redis lets go of it), until ctx ends.
func (r *redisRun) heartbeat(ctx context.Context) {
	failures := 0
	for {
		wait := r.interval()
		if id, _, _, _ := r.state(); id != "" {
			var ok bool
			if wait, ok = r.beatOnce(ctx, id); ok {
				failures = 0
			} else {
				failures++
				wait = min(backoff.Redis.Delay(failures), r.interval())
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

// beatOnce renews id's membership. On success it extends every lease to
// the send time plus the TTL minus the margin: Redis set the expiry to its
// own time when it ran the renewal, after the send, plus the TTL, so the
// lease ends here before Redis could let another worker take a slot. It
// returns when to beat next.
func (r *redisRun) beatOnce(ctx context.Context, id string) (time.Duration, bool) {
	r.mu.Lock()
	lead := !r.leaving
	r.mu.Unlock()
	sent := monoNow()
	b, err := r.co.Heartbeat(ctx, id, r.cfg.LeaseTTL, lead)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("rmq: redis coordinator: heartbeat failed", "err", err)
		}
		return 0, false
	}
	r.mu.Lock()
	if r.id != id {
		r.mu.Unlock()
		return r.interval(), true // a new incarnation meanwhile
	}
	if b.ExpiryMs < 0 {
		r.expired = true
		r.mu.Unlock()
		r.poke()
		return r.interval(), true
	}
	end := sent + int64(r.cfg.LeaseTTL-r.margin())
	if end > r.leaseEnd {
		r.leaseEnd = end
		for l := range r.leases {
			l.deadline.Store(end)
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
	return max(next, expiryGrace), true
}

// expiryGrace is how long after an expiry is due by the Redis clock the
// heartbeat that acts on it goes out.
const expiryGrace = 10 * time.Millisecond

// listen follows the coordinator's channel until ctx ends. A subscription
// (or a resubscription after a reconnect, across which messages are lost)
// makes the loop read everything again.
func (r *redisRun) listen(ctx context.Context) {
	ps := r.co.Listen(ctx)
	defer ps.Close()
	msgs := ps.ChannelWithSubscriptions()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-msgs:
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
		}
	}
}
