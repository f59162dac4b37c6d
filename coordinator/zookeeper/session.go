package zookeeper

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/wait"
)

// onEvent runs on go-zookeeper's goroutine for every event; it must not block.
func (r *membership) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	r.mu.Lock()
	closing, was := r.closing, r.live
	r.mu.Unlock()
	if closing {
		return
	}
	switch ev.State {
	case zk.StateHasSession:
		r.mu.Lock()
		r.live = true
		r.mu.Unlock()
		if !was {
			r.log.Info("rmq: zookeeper session established", "server", ev.Server)
		}
	case zk.StateDisconnected, zk.StateExpired, zk.StateAuthFailed:
		r.suspend(ev.State)
	default:
		return
	}
	r.poke()
}

// suspend stops all consumption at once: the session may be gone, so no
// lease may be trusted. Claims stay recorded: if the session comes back, its
// owner nodes are still ours.
func (r *membership) suspend(state zk.State) {
	r.mu.Lock()
	was := r.live
	r.live, r.leaseEnd = false, time.Time{}
	lost := make([]*coordinator.Grant, 0, len(r.leases))
	for g := range r.leases {
		lost = append(lost, g)
	}
	r.mu.Unlock()
	for _, g := range lost {
		g.Lose()
		r.h.Revoked(g.Lease())
	}
	if was {
		r.log.Warn("rmq: zookeeper session suspended; stopped consuming", "state", state.String(), "slots", len(lost))
	}
}

// heartbeat extends lease deadlines every sixth of the session timeout.
func (r *membership) heartbeat(ctx context.Context) {
	for ctx.Err() == nil {
		r.beat()
		wait.Sleep(ctx, r.sess.timeout(r.z.cfg.SessionTimeout)/6)
	}
}

// beat syncs with the ensemble's leader and, on success, extends the leases.
// A sync sent at t proves the session was alive after t, and the ensemble
// will not expire it before t + timeout; leases run to t + timeout/2,
// leaving half the timeout as margin for clocks and scheduling.
func (r *membership) beat() bool {
	sid, _ := r.current()
	if sid == 0 {
		return false
	}
	timeout := r.sess.timeout(r.z.cfg.SessionTimeout)
	start := time.Now()
	if _, err := r.sess.conn.Sync(r.paths.base); err != nil {
		return false
	}
	r.extend(sid, start.Add(timeout/2))
	return true
}

// extend moves the deadline of every live lease of session sid to end.
func (r *membership) extend(sid int64, end time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live || r.sess.conn.SessionID() != sid || !end.After(r.leaseEnd) {
		return
	}
	wasExpired := !time.Now().Before(r.leaseEnd)
	r.leaseEnd = end
	for g := range r.leases {
		g.SetDeadlineAt(end)
	}
	if wasExpired {
		r.poke() // reissues may be waiting for a valid deadline
	}
}

// current returns the current session id and lease end, or 0 and the zero
// time when suspended.
func (r *membership) current() (int64, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.live {
		return 0, time.Time{}
	}
	return r.sess.conn.SessionID(), r.leaseEnd
}
