package rmq

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"
)

// PendingMessage is a message waiting in a slot to be delivered.
type PendingMessage struct {
	Topic   string
	Slot    int
	Content []byte
	// Due is when the message becomes due: a fresh message's due time on a
	// time topic, or the end of a retry backoff. Zero means due at once: a
	// message retried without backoff or requeued, and every waiting message
	// of a Priority topic.
	Due time.Time
	// Priority is a fresh message's priority on a Priority topic, else 0.
	Priority int64
	// RetriesLeft is MaxRetries for a message never delivered.
	RetriesLeft int
	// Retrying is true while the message waits out a retry backoff.
	Retrying bool
}

// NextDue returns up to limit messages waiting in one slot of topic, in the
// order the slot's consumer takes them: on a time topic by due time (due at
// once first, with the retries whose backoff is over, which the consumer's
// next cycle moves to store as due at once); on a Priority topic highest priority first, then retried
// messages (those whose backoff is over among them, by retries left), then
// those waiting out a retry backoff. One round trip of O(log n + limit)
// commands (with up to 256 retries whose backoff is over: any of them may
// come first); messages already handed to a consumer are not
// listed. A slot outside the topic fails with ErrInvalidSlot.
func (c *Client) NextDue(ctx context.Context, topic string, slot, limit int) ([]PendingMessage, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	t, err := c.slotOf(ctx, topic, slot)
	if err != nil || limit <= 0 {
		return nil, err
	}
	now := c.clock.now() // a retry is ready by the Redis clock
	entries, err := c.broker.Pending(ctx, t.slots[slot], int64(limit), t.Type == Priority, t.Type == RangeMerge, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("rmq: pending messages of topic %q slot %d: %w", topic, slot, err)
	}
	out := make([]PendingMessage, len(entries))
	for i, e := range entries {
		out[i] = PendingMessage{Topic: t.Name, Slot: slot, Content: e.Member, Priority: e.Priority,
			RetriesLeft: e.RetriesLeft, Retrying: e.Retrying}
		if e.DueMs > 0 {
			out[i].Due = time.UnixMilli(e.DueMs)
		}
	}
	if t.Type != Priority {
		// store then retry, each sorted: merge them by the store score the
		// consumer pops by, stable
		slices.SortStableFunc(out, func(a, b PendingMessage) int { return cmp.Compare(popOrder(a, now), popOrder(b, now)) })
	} else {
		// store (highest score first) then retry (by due time): a retry
		// whose backoff is over goes to store with its retries left as its
		// score at the consumer's next cycle, and is popped among them
		slices.SortStableFunc(out, func(a, b PendingMessage) int { return priorityPopOrder(a, b, now) })
	}
	return out[:min(len(out), limit)], nil
}

// priorityPopOrder compares two pending messages of a Priority topic by the
// order its consumer takes them: those in store and the retries whose
// backoff is over by their store score (a priority, or the retries left of
// one due at once), highest first, and equal scores by content, last
// first, as Redis ranks them; then the retries still waiting, in due order.
func priorityPopOrder(a, b PendingMessage, now time.Time) int {
	waitingA, waitingB := a.Retrying && a.Due.After(now), b.Retrying && b.Due.After(now)
	switch {
	case waitingA != waitingB:
		if waitingA {
			return 1
		}
		return -1
	case waitingA:
		return 0 // keep their due order
	}
	score := func(m PendingMessage) int64 {
		if m.Priority > 0 {
			return m.Priority
		}
		return int64(m.RetriesLeft)
	}
	if c := cmp.Compare(score(b), score(a)); c != 0 {
		return c
	}
	return bytes.Compare(b.Content, a.Content)
}

// popOrder is the store score by which the consumer of a time topic takes
// m: a message due at once and a retry whose backoff is over (moved to store
// as due at once by the consumer's next cycle) by its retries left, before
// every message due at a time; the others by their due time in ms.
func popOrder(m PendingMessage, now time.Time) int64 {
	if m.Due.IsZero() || (m.Retrying && !m.Due.After(now)) {
		return int64(m.RetriesLeft)
	}
	return m.Due.UnixMilli()
}

// DeleteDead deletes one dead message of a slot of topic (as listed by
// DeadMessages) and reports whether it was there. A slot outside the topic
// fails with ErrInvalidSlot.
func (c *Client) DeleteDead(ctx context.Context, topic string, slot int, content []byte) (bool, error) {
	if ctx == nil {
		return false, ErrNilContext
	}
	if err := c.checkOpen(); err != nil {
		return false, err
	}
	t, err := c.slotOf(ctx, topic, slot)
	if err != nil {
		return false, err
	}
	defer c.backlogs.forget(t.Name)
	ok, err := c.broker.DeleteDead(ctx, t.slots[slot], content)
	if err != nil {
		return false, fmt.Errorf("rmq: delete dead message of topic %q slot %d: %w", topic, slot, err)
	}
	return ok, nil
}

// slotOf returns topic after checking that slot is one of its slots.
func (c *Client) slotOf(ctx context.Context, topic string, slot int) (*topicInfo, error) {
	t, err := c.loadTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if slot < 0 || slot >= t.SlotAmount {
		return nil, fmt.Errorf("%w: topic %q has slots 0..%d, not %d", ErrInvalidSlot, t.Name, t.SlotAmount-1, slot)
	}
	return t, nil
}
