package rmq

import (
	"errors"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/rdb"
)

// Sentinel errors. Every error returned for bad input wraps one of these, with
// the topic (and slot where it applies) in the message; test with errors.Is.
var (
	// ErrInvalidTopic: a topic name that is empty, too long, uses characters
	// outside [A-Za-z0-9._-] (braces would break the Redis Cluster hash tag),
	// or is "." or ".." (a ZooKeeper path cannot hold them).
	ErrInvalidTopic = errors.New("rmq: invalid topic name")
	// ErrInvalidNamespace: a namespace that breaks the same rules as a topic name.
	ErrInvalidNamespace = errors.New("rmq: invalid namespace")
	// ErrSlotAmount: a slot amount that is not a power of two in [1, MaxSlotAmount].
	ErrSlotAmount = errors.New("rmq: slot amount must be a power of two")
	// ErrInvalidTopicType: a TopicType outside RangeMerge, Priority, FixedTime.
	ErrInvalidTopicType = errors.New("rmq: invalid topic type")
	// ErrTopicConflict: a topic is defined again with another slot amount or
	// type, in Redis or in the coordinator's record. It is the same error as
	// coordinator.ErrTopicConflict.
	ErrTopicConflict = coordinator.ErrTopicConflict
	// ErrUnreadableTopic: a stored topic definition that this version cannot
	// read (one written by a newer version, or damaged). Topics leaves it out
	// and says so with this error, beside the topics it could read.
	ErrUnreadableTopic = errors.New("rmq: unreadable topic definition")
	// ErrUnknownTopic: a send, subscribe or admin call names a topic that was
	// never defined in this namespace.
	ErrUnknownTopic = errors.New("rmq: unknown topic")
	// ErrTopicTypeMismatch: a message type that does not match its topic's type
	// (for example a PriorityMessage sent to a FixedTime topic).
	ErrTopicTypeMismatch = errors.New("rmq: message type does not match topic type")
	// ErrInvalidPriority: a priority of 16 or less, or above MaxPriority.
	ErrInvalidPriority = errors.New("rmq: priority must be greater than 16")
	// ErrInvalidTime: a FixedTime not in the future, or a TimeRange that is not
	// positive or is too large.
	ErrInvalidTime = errors.New("rmq: invalid time")
	// ErrEmptyContent: a message without content.
	ErrEmptyContent = errors.New("rmq: empty message content")
	// ErrContentTooLarge: content longer than the configured maximum.
	ErrContentTooLarge = errors.New("rmq: message content too large")
	// ErrInvalidMessage: a nil message (or a nil pointer to one) or an
	// OutgoingMessage of an unknown kind.
	ErrInvalidMessage = errors.New("rmq: invalid message")
	// ErrInvalidSlot: a slot index outside [0, SlotAmount) of its topic.
	ErrInvalidSlot = errors.New("rmq: slot out of range")
	// ErrInvalidOption: an option with a value out of range.
	ErrInvalidOption = errors.New("rmq: invalid option")
	// ErrNilListener: Subscribe was given a nil listener.
	ErrNilListener = errors.New("rmq: nil listener")
	// ErrAlreadySubscribed: Subscribe was called twice for one topic.
	ErrAlreadySubscribed = errors.New("rmq: topic already subscribed")
	// ErrStarted: Subscribe or Start was called after Start.
	ErrStarted = errors.New("rmq: client already started")
	// ErrNamespaceBusy: Start found the namespace consumed by a process it
	// cannot share it with: any other process, for a client of the local
	// coordinator; a process of the local coordinator or of another kind of
	// coordinator, for the others.
	ErrNamespaceBusy = errors.New("rmq: namespace consumed by a process this one cannot share it with")
	// ErrInvalidRateLimit: a negative or non-finite rate, a burst below 1
	// with a rate, or a burst without a rate.
	ErrInvalidRateLimit = errors.New("rmq: invalid rate limit")
	// ErrTopicNotEmpty: DeleteTopic of a topic that still holds messages,
	// without Force.
	ErrTopicNotEmpty = errors.New("rmq: topic not empty")
	// ErrTopicInUse: DeleteTopic of a topic a running process consumes.
	ErrTopicInUse = errors.New("rmq: topic in use")
	// ErrNotReplicated: a Send or SendBatch of a client made WithReplicaAck
	// whose write Redis stored but did not confirm on enough replicas in
	// time; the error wraps what Redis said. The message may be lost if its
	// master dies before a replica has it; sending it again is safe (the
	// same content merges).
	ErrNotReplicated = rdb.ErrNotReplicated
	// ErrClosed: the client was closed. A Send that Close cut off after its
	// command was written (Close's ctx ended before the reply came) also
	// fails with an error that wraps ErrClosed, and says that the message
	// may have been stored: Redis may have run the command. Sending it
	// again is safe (the same content merges).
	ErrClosed = errors.New("rmq: client closed")
	// ErrNilContext: a method of Client or Producer was given a nil
	// context. It fails before any I/O and changes nothing.
	ErrNilContext = errors.New("rmq: nil context")
	// ErrNotOwner: returned by a listener (or seen in logs) when this worker may
	// no longer own the message's slot; see Owned.
	ErrNotOwner = errors.New("rmq: slot no longer owned by this worker")
)
