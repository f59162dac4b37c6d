package coordinator

import (
	"context"
	"time"
)

// Local gives every slot of every subscribed topic to this process, slot i
// to thread i mod Threads: right for one process per namespace, tests, and
// the embedded demo. Exclusivity holds inside the process; for many
// processes use a coordinator they share: Redis (the default of rmq.New), or
// the one of package coordinator/zookeeper.
type Local struct{}

var _ Coordinator = Local{}

// NewLocal returns the local coordinator.
func NewLocal() Local { return Local{} }

// Run implements Coordinator. With Member.Exclusive set, every lease ends
// at the last time it told (none is valid before the first), during the
// drain too.
func (Local) Run(ctx context.Context, m Member, h Handler) error {
	var grants []*Grant
	vouch := func(until time.Time) {
		for _, g := range grants {
			g.SetDeadlineAt(until)
		}
	}
	var until time.Time // zero: none told yet
	if m.Exclusive != nil {
		select {
		case until = <-m.Exclusive:
		default:
		}
	}
	for _, t := range m.Topics {
		threads := max(t.Threads, 1)
		for s := 0; s < t.SlotAmount; s++ {
			l, g := NewLease(t.Topic, s, s%threads, 0)
			if m.Exclusive != nil {
				g.SetDeadlineAt(until)
			}
			grants = append(grants, g)
			h.Assigned(l)
		}
	}
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			waiting = false
		case <-m.Abandoned:
			waiting = false
		case t := <-m.Exclusive:
			vouch(t)
		}
	}
	for _, g := range grants {
		g.Revoke()
		h.Revoked(g.Lease())
	}
	for _, g := range grants {
		for released := false; !released; {
			select {
			case <-g.Released():
				released = true
			case <-m.Abandoned:
				g.Lose()
				released = true
			case t := <-m.Exclusive:
				vouch(t)
			}
		}
	}
	return nil
}

// Kind implements Kinded: "local".
func (Local) Kind() string { return "local" }

// RevokeAll revokes the leases of grants and waits until each is released.
func RevokeAll(h Handler, grants []*Grant) {
	for _, g := range grants {
		g.Revoke()
		h.Revoked(g.Lease())
	}
	for _, g := range grants {
		<-g.Released()
	}
}
