// Package coordinator decides which thread of which process consumes each
// slot of each topic. A slot is consumed by exactly one thread at a time: a
// coordinator hands a slot to a thread as a Lease and, before the slot may
// start anywhere else, asks for it back and waits until the holder releases it
// (or until the holder's lease has provably expired).
//
// Two coordinators ship with RMQ: Local (one process owns every slot) and
// ZooKeeper (slots spread over every live worker of a cluster).
package coordinator

import "context"

// Member describes what this process consumes.
type Member struct {
	// Topics lists the subscribed topics with their threads.
	Topics []TopicThreads
}

// TopicThreads is one subscribed topic.
type TopicThreads struct {
	Topic      string
	SlotAmount int
	Threads    int // threads of this process for the topic, ≥ 1
}

// Handler receives the coordinator's decisions. Its methods must not block.
type Handler interface {
	// Assigned hands a slot to one of this process's threads. The thread may
	// pop from the slot while the lease is valid and not revoked.
	Assigned(l *Lease)
	// Revoked asks for a slot back: the thread stops popping, lets the
	// message in hand finish, returns unstarted ones, settles outcomes, and
	// then calls l.Release. The same signal is on l.Revoking().
	Revoked(l *Lease)
}

// Coordinator assigns slots to threads.
type Coordinator interface {
	// Run joins the group as m and hands leases to h until ctx ends. When ctx
	// ends it revokes every lease, waits until each is released (or lost),
	// leaves the group and returns nil. It returns early only on a fatal
	// error (after revoking what it handed out).
	Run(ctx context.Context, m Member, h Handler) error
}
