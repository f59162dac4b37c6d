package coordinator

import "context"

// Local gives every slot of every subscribed topic to this process, slot i
// to thread i mod Threads: right for one process per namespace, tests, and
// the embedded demo. Exclusivity holds inside the process; for many
// processes use a coordinator they share: Redis (the default of rmq.New), or
// the one of package coordinator/zookeeper.
type Local struct{}

var _ Coordinator = Local{}

// NewLocal returns the local coordinator.
func NewLocal() Local { return Local{} }

// Run implements Coordinator.
func (Local) Run(ctx context.Context, m Member, h Handler) error {
	var grants []*Grant
	for _, t := range m.Topics {
		threads := max(t.Threads, 1)
		for s := 0; s < t.SlotAmount; s++ {
			l, g := NewLease(t.Topic, s, s%threads, 0)
			grants = append(grants, g)
			h.Assigned(l)
		}
	}
	select {
	case <-ctx.Done():
	case <-m.Abandoned:
	}
	for _, g := range grants {
		g.Revoke()
		h.Revoked(g.Lease())
	}
	for _, g := range grants {
		select {
		case <-g.Released():
		case <-m.Abandoned:
			g.Lose()
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
