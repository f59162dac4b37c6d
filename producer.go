package rmq

import (
	"context"
	"fmt"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// Producer sends messages. It is safe for concurrent use; concurrent Sends
// are coalesced into pipelines, so many goroutines sending one message each
// cost far fewer round trips than messages.
type Producer struct {
	c     *Client
	queue *sendQueue
}

// Send stores one message. It returns once Redis has stored it, or with an
// error that says why not. Bad input fails before any I/O and stores nothing.
// If ctx ends first, Send returns ctx.Err() and the message may or may not
// have been stored.
func (p *Producer) Send(ctx context.Context, m OutgoingMessage) error {
	r := reqPool.Get().(*sendReq)
	if err := p.build(ctx, m, time.Now(), r); err != nil {
		reqPool.Put(r)
		return err
	}
	metrics := r.topic.metrics
	if err := p.queue.send(ctx, r); err != nil {
		return err
	}
	metrics.sent.Add(1)
	p.c.stats.start()
	return nil
}

// SendBatch stores msgs in one pipeline. Every message is validated first: if
// one is bad, SendBatch returns its error (naming its index) and stores
// nothing. On a Redis error some messages may have been stored; sending the
// batch again is safe, since copies of one content merge.
func (p *Producer) SendBatch(ctx context.Context, msgs ...OutgoingMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := p.c.checkOpen(); err != nil {
		return err
	}
	now := time.Now()
	reqs := make([]*sendReq, len(msgs))
	all := make([]sendReq, len(msgs))
	for i, m := range msgs {
		if err := p.build(ctx, m, now, &all[i]); err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		reqs[i] = &all[i]
	}
	for start := 0; start < len(reqs); start += maxPipeline {
		chunk := reqs[start:min(start+maxPipeline, len(reqs))]
		if err := p.queue.store(ctx, chunk); err != nil {
			return err
		}
		for _, r := range chunk {
			if r.err == nil {
				r.topic.metrics.sent.Add(1)
			}
		}
		p.c.stats.start()
		for i, r := range chunk {
			if r.err != nil {
				return fmt.Errorf("rmq: send message %d to topic %q: %w", start+i, r.topic.Name, r.err)
			}
		}
	}
	return nil
}

// build validates m and fills r with its store entry.
func (p *Producer) build(ctx context.Context, m OutgoingMessage, now time.Time, r *sendReq) error {
	if err := p.c.checkOpen(); err != nil {
		return err
	}
	if m == nil {
		return fmt.Errorf("%w: nil message", ErrInvalidMessage)
	}
	o, err := m.prepare(now)
	if err != nil {
		return fmt.Errorf("topic %q: %w", m.TopicName(), err)
	}
	if err := p.c.checkContent(o.topic, o.content); err != nil {
		return err
	}
	t, err := p.c.lookupTopic(ctx, o.topic)
	if err != nil {
		return err
	}
	if t.Type != o.typ {
		return fmt.Errorf("%w: topic %q is %s, message is %s", ErrTopicTypeMismatch, t.Name, t.Type, o.typ)
	}
	slot := slotOf(o.content, o.basis, t.SlotAmount)
	r.topic, r.slot, r.dueMs = t, slot, o.dueMs
	r.entry = rdb.Entry{Key: t.slots[slot].Store, Score: o.score, Member: o.content, NX: t.Type == RangeMerge}
	return nil
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
// handed to a listener is not affected.
func (p *Producer) Cancel(ctx context.Context, topic string, content []byte, slotBasis string) (bool, error) {
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
	removed, err := p.c.broker.Cancel(ctx, t.slots[slot], content)
	if err != nil {
		return false, fmt.Errorf("rmq: cancel in topic %q slot %d: %w", topic, slot, err)
	}
	return removed, nil
}
