package coordinator

import "context"

// Local gives every slot of every subscribed topic to this process, slot i
// to thread i mod Threads. It is the default coordinator: right for one
// process per namespace, tests, and the embedded demo. Exclusivity holds
// inside the process; it does not stop a second process from consuming the
// same slots, for which use the ZooKeeper coordinator.
type Local struct{}

var _ Coordinator = Local{}

// NewLocal returns the local coordinator.
func NewLocal() Local { return Local{} }

// Run implements Coordinator.
func (Local) Run(ctx context.Context, m Member, h Handler) error {
	var leases []*Lease
	for _, t := range m.Topics {
		threads := max(t.Threads, 1)
		for s := 0; s < t.SlotAmount; s++ {
			l := NewLease(t.Topic, s, s%threads, 0)
			leases = append(leases, l)
			h.Assigned(l)
		}
	}
	select {
	case <-ctx.Done():
	case <-m.Abandoned:
	}
	for _, l := range leases {
		l.Revoke()
		h.Revoked(l)
	}
	for _, l := range leases {
		select {
		case <-l.Released():
		case <-m.Abandoned:
			l.Lose()
		}
	}
	return nil
}

// Kind implements Kinded: "local".
func (Local) Kind() string { return "local" }

// RevokeAll revokes leases and waits until each is released.
func RevokeAll(h Handler, leases []*Lease) {
	for _, l := range leases {
		l.Revoke()
		h.Revoked(l)
	}
	for _, l := range leases {
		<-l.Released()
	}
}
