package rmq

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/wait"
)

// Producer sends messages. It is safe for concurrent use. It validates and
// encodes; storing, with the sharing of writes among concurrent Sends and the
// retries, is the broker's (see the README's Sending section).
type Producer struct {
	c *Client
}

// Send stores one message. It returns once Redis has stored it, or with an
// error that says why not. Bad input fails before any I/O and stores nothing.
// If ctx ends first, Send returns ctx.Err() and the message may or may not
// have been stored: a Send still queued behind other writes then is left
// unwritten (Metrics.SendsAbandoned counts those), one already written may
// have been stored. If Close cuts the wait for the reply short, the error
// wraps ErrClosed and says that the message may have been stored.
//
// The content is not read after Send returns: the caller may reuse it. (A
// write under way may outlive a Send whose ctx ended, so with a ctx that can
// end, Send hands the writer a copy.) A nil ctx fails with ErrNilContext.
func (p *Producer) Send(ctx context.Context, m OutgoingMessage) error {
	if ctx == nil {
		return ErrNilContext
	}
	e, t, err := p.build(ctx, m, time.Now())
	if err != nil {
		return err
	}
	if ctx.Done() != nil {
		e.Member = bytes.Clone(e.Member)
	}
	err = p.c.broker.Send(ctx, e)
	p.c.stats.start()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rdb.ErrClosedInFlight):
		return fmt.Errorf("%w before Redis answered: the message to topic %q slot %d may have been stored", ErrClosed, t.Name, e.Wake.Slot)
	case errors.Is(err, rdb.ErrClosed):
		return ErrClosed
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return err // ctx ended first: as it is, like every ctx error of the client
	}
	return fmt.Errorf("rmq: send to topic %q slot %d: %w", t.Name, e.Wake.Slot, err)
}

// SendBatch stores msgs in one pipeline (one per 512 messages). Every message
// is validated first: if one is bad, SendBatch returns its error (naming its
// index) and stores nothing. On a Redis error some messages may have been
// stored; sending the batch again is safe, since copies of one content merge.
//
// If ctx ends first, SendBatch returns ctx.Err() and the messages may or may
// not have been stored: a pipeline already written runs on until its replies
// come or the Redis client's timeouts end it (go-redis's reads heed a ctx's
// deadline only with ContextTimeoutEnabled), and Close waits for it.
//
// The contents are not read after SendBatch returns: the caller may reuse
// them. (With a ctx that can end, the pipeline works on one copy of them
// all, since it may outlive the call.) A nil ctx fails with ErrNilContext.
func (p *Producer) SendBatch(ctx context.Context, msgs ...OutgoingMessage) error {
	if ctx == nil {
		return ErrNilContext
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := p.c.checkOpen(); err != nil {
		return err
	}
	now := time.Now()
	entries := make([]rdb.Entry, len(msgs))
	for i, m := range msgs {
		e, _, err := p.build(ctx, m, now)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		entries[i] = e
	}
	if err := ctx.Err(); err != nil {
		return err // nothing written
	}
	if ctx.Done() != nil {
		ownContents(entries)
	}
	if !p.c.batches.enter() {
		return ErrClosed
	}
	done := make(chan []error, 1)
	go func() {
		defer p.c.batches.leave()
		errs, _ := p.c.broker.Enqueue(ctx, entries, nil) // a failed wake-up is logged there
		p.c.stats.start()
		done <- errs
	}()
	errs, back := wait.Or(done, ctx.Done())
	if !back {
		return ctx.Err() // the pipeline runs on (see above)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("rmq: send message %d to topic %q: %w", i, msgs[i].TopicName(), err)
		}
	}
	return nil
}

// ownContents points the entries' members into one copy of them all, so
// that a pipeline that outlives its SendBatch reads none of the caller's
// slices.
func ownContents(entries []rdb.Entry) {
	n := 0
	for i := range entries {
		n += len(entries[i].Member)
	}
	arena := make([]byte, 0, n)
	for i := range entries {
		start := len(arena)
		arena = append(arena, entries[i].Member...)
		entries[i].Member = arena[start:len(arena):len(arena)]
	}
}

// build validates m and returns its store entry and its topic.
func (p *Producer) build(ctx context.Context, m OutgoingMessage, now time.Time) (rdb.Entry, *topicInfo, error) {
	if err := p.c.checkOpen(); err != nil {
		return rdb.Entry{}, nil, err
	}
	o, err := prepareMessage(m, now)
	if err != nil {
		return rdb.Entry{}, nil, err
	}
	if err := p.c.checkContent(o.topic, o.content); err != nil {
		return rdb.Entry{}, nil, err
	}
	t, err := p.c.lookupTopic(ctx, o.topic)
	if err != nil {
		return rdb.Entry{}, nil, err
	}
	if t.Type != o.typ {
		return rdb.Entry{}, nil, fmt.Errorf("%w: topic %q is %s, message is %s", ErrTopicTypeMismatch, t.Name, t.Type, o.typ)
	}
	slot := slotOf(o.content, o.basis, t.SlotAmount)
	key, wake := t.slots[slot].Store, rdb.Wake{Channel: t.wake, Shard: t.slots[slot].Wake, Slot: slot}
	var e rdb.Entry
	if t.Type == Priority {
		e = rdb.PriorityEntry(key, o.content, o.priority, wake)
	} else {
		e = rdb.DueEntry(key, o.content, o.dueMs, t.Type == RangeMerge, wake)
	}
	e.Counted = &t.metrics.sent // the topic's Sent, once Redis stored it
	return e, t, nil
}

// prepareMessage validates m as of now. Only this package's message types
// implement OutgoingMessage (prepare is unexported), alone or embedded in a
// caller's struct; a nil one (a typed nil pointer, or a nil pointer embedded)
// dereferences nil on its value receiver, which this reports as
// ErrInvalidMessage. Any other panic is not ours to hide.
func prepareMessage(m OutgoingMessage, now time.Time) (o outgoing, err error) {
	if m == nil {
		return outgoing{}, fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	defer func() {
		if r := recover(); r != nil {
			if re, ok := r.(runtime.Error); !ok || !nilReceiver(re) {
				panic(r)
			}
			o, err = outgoing{}, fmt.Errorf("%w: nil message (%T)", ErrInvalidMessage, m)
		}
	}()
	if o, err = m.prepare(now); err != nil {
		return outgoing{}, fmt.Errorf("topic %q: %w", m.TopicName(), err)
	}
	return o, nil
}

// nilReceiver reports whether a runtime panic is a method called on a nil
// pointer: a nil dereference, or a value method called through a nil pointer.
func nilReceiver(re runtime.Error) bool {
	msg := re.Error()
	return strings.Contains(msg, "nil pointer dereference") || strings.Contains(msg, "called using nil")
}

// checkContent validates a message content.
func (c *Client) checkContent(topic string, content []byte) error {
	if len(content) == 0 {
		return fmt.Errorf("%w (topic %q)", ErrEmptyContent, topic)
	}
	if len(content) > c.cfg.maxContent {
		return fmt.Errorf("%w: %d bytes, limit %d (topic %q)", ErrContentTooLarge, len(content), c.cfg.maxContent, topic)
	}
	return nil
}

// Cancel removes a pending message (waiting to be due, or waiting for a
// retry) and reports whether there was one. slotBasis must be the one the
// message was sent with ("" when it was sent without). A message already
// handed to a listener is not affected. A nil ctx fails with ErrNilContext.
// On an error (a Redis failure, ctx ended) the removal may still have run
// or run later: call Cancel again to know.
func (p *Producer) Cancel(ctx context.Context, topic string, content []byte, slotBasis string) (bool, error) {
	if ctx == nil {
		return false, ErrNilContext
	}
	if err := p.c.checkOpen(); err != nil {
		return false, err
	}
	if err := p.c.checkContent(topic, content); err != nil {
		return false, err
	}
	t, err := p.c.lookupTopic(ctx, topic)
	if err != nil {
		return false, err
	}
	slot := slotOf(content, slotBasis, t.SlotAmount)
	defer p.c.backlogs.forget(t.Name)
	removed, err := p.c.broker.Cancel(ctx, t.slots[slot], content)
	if err != nil {
		return false, fmt.Errorf("rmq: cancel in topic %q slot %d: %w", topic, slot, err)
	}
	return removed, nil
}
