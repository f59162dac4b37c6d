package rmq

import (
	"fmt"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// MaxPriority is the highest priority a PriorityMessage may carry (scores are
// float64, exact up to 2^53).
const MaxPriority = 1<<53 - 1

// maxDueMs bounds due times so scores stay exact in float64.
const maxDueMs = 1 << 50

// Message is a message handed to a MessageListener.
type Message struct {
	Topic   string
	Slot    int
	Content []byte
	// RetriesLeft is how many more deliveries follow if this one fails: 16
	// on the first delivery, 0 on the last before the dead set.
	RetriesLeft int
	// Attempt counts deliveries: 1 on the first, MaxRetries+1 on the last.
	Attempt int
	// Due is when a RangeMerge or FixedTime message became due (zero on a retry
	// and for Priority topics): the sender's time rounded up to the
	// millisecond, since delivery is never early.
	Due time.Time
	// Priority is the priority of a Priority message (0 on a retry).
	Priority int64
	// Delivered is when the message was popped, by the Redis clock.
	Delivered time.Time
}

// OutgoingMessage is a message to send: RangeMergeMessage, PriorityMessage or
// FixedTimeMessage.
type OutgoingMessage interface {
	// TopicName returns the topic the message goes to.
	TopicName() string
	// prepare validates the message as of now and returns what to store.
	prepare(now time.Time) (outgoing, error)
}

// outgoing is a validated message ready to store.
type outgoing struct {
	typ      TopicType
	topic    string
	content  []byte
	basis    string
	dueMs    int64 // when it becomes due (time types)
	priority int64 // Priority
}

// RangeMergeMessage is delivered TimeRange after it is sent. Copies of one
// content sent while it waits merge into it and keep its first due time.
type RangeMergeMessage struct {
	Topic     string
	Content   []byte
	TimeRange time.Duration // > 0
	SlotBasis string        // optional; the content when empty
}

// PriorityMessage is delivered highest Priority first. A copy of a waiting
// content replaces its priority.
type PriorityMessage struct {
	Topic     string
	Content   []byte
	Priority  int64 // 17..MaxPriority
	SlotBasis string
}

// FixedTimeMessage is delivered at FixedTime (never before it, by the Redis
// server's clock, to the millisecond). A copy of a waiting content replaces
// its time.
type FixedTimeMessage struct {
	Topic     string
	Content   []byte
	FixedTime time.Time // in the future
	SlotBasis string
}

// TopicName implements OutgoingMessage.
func (m RangeMergeMessage) TopicName() string { return m.Topic }

// TopicName implements OutgoingMessage.
func (m PriorityMessage) TopicName() string { return m.Topic }

// TopicName implements OutgoingMessage.
func (m FixedTimeMessage) TopicName() string { return m.Topic }

func (m RangeMergeMessage) prepare(now time.Time) (outgoing, error) {
	if m.TimeRange <= 0 {
		return outgoing{}, fmt.Errorf("%w: time range %v is not positive", ErrInvalidTime, m.TimeRange)
	}
	due := ceilMs(now.Add(m.TimeRange))
	if due > maxDueMs || m.TimeRange > 100*365*24*time.Hour {
		return outgoing{}, fmt.Errorf("%w: time range %v is too large", ErrInvalidTime, m.TimeRange)
	}
	return outgoing{typ: RangeMerge, topic: m.Topic, content: m.Content, basis: m.SlotBasis, dueMs: due}, nil
}

func (m PriorityMessage) prepare(time.Time) (outgoing, error) {
	if m.Priority <= MaxRetries || m.Priority > MaxPriority {
		return outgoing{}, fmt.Errorf("%w and at most %d, got %d", ErrInvalidPriority, int64(MaxPriority), m.Priority)
	}
	return outgoing{typ: Priority, topic: m.Topic, content: m.Content, basis: m.SlotBasis, priority: m.Priority}, nil
}

func (m FixedTimeMessage) prepare(now time.Time) (outgoing, error) {
	if !m.FixedTime.After(now) {
		return outgoing{}, fmt.Errorf("%w: fixed time %s is not in the future", ErrInvalidTime, m.FixedTime.Format(time.RFC3339Nano))
	}
	due := ceilMs(m.FixedTime)
	if due > maxDueMs {
		return outgoing{}, fmt.Errorf("%w: fixed time %s is too far ahead", ErrInvalidTime, m.FixedTime.Format(time.RFC3339Nano))
	}
	return outgoing{typ: FixedTime, topic: m.Topic, content: m.Content, basis: m.SlotBasis, dueMs: due}, nil
}

// ceilMs returns t in Unix milliseconds, rounded up, so a message is never
// delivered before its time. It does not overflow (UnixNano does after the
// year 2262, UnixMilli after 292 million): a time past maxDueMs gives
// maxDueMs+1, which the callers refuse.
func ceilMs(t time.Time) int64 {
	if t.Unix() > maxDueMs/1000 {
		return maxDueMs + 1
	}
	ms := t.UnixMilli()
	if t.Nanosecond()%1e6 > 0 {
		ms++
	}
	return ms
}

// newMessage builds the Message for a delivery popped at nowMs.
func newMessage(t *topicInfo, slot int, d *rdb.Delivery, nowMs int64) *Message {
	m := &Message{Topic: t.Name, Slot: slot, Content: d.Member, RetriesLeft: d.RetriesLeft,
		Attempt: MaxRetries + 1 - d.RetriesLeft, Priority: d.Priority, Delivered: time.UnixMilli(nowMs)}
	if d.DueMs > 0 {
		m.Due = time.UnixMilli(d.DueMs)
	}
	return m
}
