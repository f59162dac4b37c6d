// Package coordinator decides which thread of which process consumes each
// slot of each topic. A slot is consumed by exactly one thread at a time: a
// coordinator hands a slot to a thread as a Lease and, before the slot may
// start anywhere else, asks for it back and waits until the holder releases it
// (or until the holder's lease has provably expired).
//
// The package holds what every coordinator and its implementers share: the
// Coordinator and Handler interfaces, the Lease a holder gets and the Grant
// its coordinator keeps, and Assign, the pure assignment of slots to threads.
// Two coordinators live here: Redis (slots spread over every live worker,
// with nothing but Redis; the default of rmq.New) and Local (one process owns
// every slot). The ZooKeeper coordinator is in package
// github.com/rmq-go/rmq/coordinator/zookeeper, so that importing this package
// does not link a ZooKeeper client.
package coordinator

import (
	"context"
	"errors"
	"time"
)

// Member describes what this process consumes.
type Member struct {
	// Namespace is the client's namespace; coordinators keep namespaces apart.
	Namespace string
	// Topics lists the subscribed topics with their threads.
	Topics []TopicThreads
	// DrainTimeout bounds how long a revoked slot may take to be released
	// (the consume timeout): past it the coordinator takes the slot away
	// (the lease turns invalid) and moves on.
	DrainTimeout time.Duration
	// Abandoned, when not nil, is closed when the client stops waiting for
	// its listeners (a Shutdown whose context ended): the coordinator loses
	// every lease at once and Run returns promptly, without waiting for
	// releases.
	Abandoned <-chan struct{}
	// Declines, when not nil, holds the slots this process cannot serve
	// now, which a coordinator that honours it (DeclineHonourer) moves to
	// processes that can, while any can.
	Declines *Declines
	// Exclusive, when not nil, tells the local coordinator until when this
	// process is vouched to hold the namespace alone (the client's presence
	// entry, renewed): its leases end then unless a later time comes, so a
	// process frozen or cut off past its entry's expiry sees Owned false
	// before another process can have taken the namespace. Coordinators
	// that share the namespace among processes ignore it.
	Exclusive <-chan time.Time
}

// Kinded is implemented by coordinators that name their kind ("local",
// "redis", "zookeeper"): processes of one namespace must agree on it, and a
// local process shares its namespace with nobody.
type Kinded interface {
	Kind() string
}

// TopicThreads is one subscribed topic.
type TopicThreads struct {
	Topic      string
	SlotAmount int
	Threads    int    // threads of this process for the topic, ≥ 1
	Definition string // the topic definition as stored in Redis (JSON)
}

// Handler receives the coordinator's decisions. Its methods must not block.
type Handler interface {
	// Assigned hands a slot to one of this process's threads. The thread may
	// pop from the slot while the lease is valid and not revoked. The
	// coordinator keeps the lease's Grant.
	Assigned(l *Lease)
	// Revoked asks for a slot back: the thread stops popping, lets the
	// message in hand finish, returns unstarted ones, settles outcomes, and
	// then calls l.Release. The same signal is on l.Revoking() (and
	// l.IsRevoked()).
	Revoked(l *Lease)
}

// ErrTopicConflict is returned when a topic is defined again with another
// slot amount or type: by a coordinator whose recorded definition differs,
// and by the rmq client (rmq.ErrTopicConflict is this same error).
var ErrTopicConflict = errors.New("rmq: topic already defined differently")

// TopicRemover is implemented by coordinators that keep records of a topic
// (its definition, assignment, owners) outside the topic's Redis keys.
type TopicRemover interface {
	// RemoveTopic deletes every record of topic name of namespace; a topic
	// without records is no error.
	RemoveTopic(ctx context.Context, namespace, name string) error
}

// TopicRecorder is implemented by coordinators that keep topic definitions.
type TopicRecorder interface {
	// RecordTopic stores def for topic name of namespace unless one exists;
	// a different existing definition fails with ErrTopicConflict.
	RecordTopic(ctx context.Context, namespace, name, def string) error
}

// Coordinator assigns slots to threads.
type Coordinator interface {
	// Run joins the group as m and hands leases to h until ctx ends. When ctx
	// ends it revokes every lease, waits until each is released (or lost),
	// leaves the group and returns nil. It returns early only on a fatal
	// error (after revoking what it handed out).
	Run(ctx context.Context, m Member, h Handler) error
}
