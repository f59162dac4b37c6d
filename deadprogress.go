package rmq

import (
	"context"
	"fmt"

	"github.com/rmq-go/rmq/internal/rdb"
)

// DeadProgress is how far a RequeueDeadProgress or PurgeDeadProgress call
// got.
type DeadProgress struct {
	Topic string
	// Slot is the slot being worked on; Slots is the topic's slot amount.
	Slot, Slots int
	// Done counts the messages requeued or purged so far.
	Done int64
	// Total is how many dead messages the topic held when the call began
	// (deaths meanwhile are not counted).
	Total int64
}

// requeueChunk is the most dead messages one requeue script call moves, so
// a large dead set never blocks Redis for long.
const requeueChunk = 1000

// RequeueDeadProgress is RequeueDead that calls progress (when not nil)
// after every step: at most requeueChunk messages of one slot. progress runs
// on the caller's goroutine.
func (c *Client) RequeueDeadProgress(ctx context.Context, topic string, progress func(DeadProgress), contents ...[]byte) (int64, error) {
	if ctx == nil {
		return 0, ErrNilContext
	}
	if err := c.checkOpen(); err != nil {
		return 0, err
	}
	t, counts, err := c.counts(ctx, topic)
	if err != nil {
		return 0, err
	}
	p := DeadProgress{Topic: t.Name, Slots: t.SlotAmount}
	for _, n := range counts {
		p.Total += n.Dead
	}
	defer c.backlogs.forget(t.Name)
	var woken []rdb.Wake
	defer func() { c.wakeRequeued(ctx, woken) }()
	for slot, n := range counts {
		p.Slot = slot
		for left := n.Dead; left > 0; {
			k, err := c.broker.Requeue(ctx, t.slots[slot], requeueChunk, contents)
			if err != nil {
				return p.Done, fmt.Errorf("rmq: requeue dead of topic %q slot %d: %w", topic, slot, err)
			}
			p.Done += k
			if k > 0 {
				woken = append(woken, rdb.Wake{Channel: t.wake, Shard: t.slots[slot].Wake, Slot: slot})
				if progress != nil {
					progress(p)
				}
			}
			if k == 0 || len(contents) > 0 {
				break
			}
			left -= k
		}
	}
	return p.Done, nil
}

// wakeRequeued tells the consumers of the slots in woken that messages are
// due. The broker handles a failed publication as every failed wake-up's
// (logged, published again), so its error needs nothing more here.
func (c *Client) wakeRequeued(ctx context.Context, woken []rdb.Wake) {
	for _, p := range rdb.WakePublications(woken) {
		_ = c.broker.PublishWake(ctx, p)
	}
}

// PurgeDeadProgress is PurgeDead that calls progress (when not nil) after
// every slot it purged. progress runs on the caller's goroutine.
func (c *Client) PurgeDeadProgress(ctx context.Context, topic string, progress func(DeadProgress)) (int64, error) {
	if ctx == nil {
		return 0, ErrNilContext
	}
	if err := c.checkOpen(); err != nil {
		return 0, err
	}
	t, counts, err := c.counts(ctx, topic)
	if err != nil {
		return 0, err
	}
	p := DeadProgress{Topic: t.Name, Slots: t.SlotAmount}
	for _, n := range counts {
		p.Total += n.Dead
	}
	defer c.backlogs.forget(t.Name)
	for slot, n := range counts {
		if n.Dead == 0 {
			continue
		}
		p.Slot = slot
		k, err := c.broker.Purge(ctx, t.slots[slot])
		if err != nil {
			return p.Done, fmt.Errorf("rmq: purge dead of topic %q slot %d: %w", topic, slot, err)
		}
		p.Done += k
		if progress != nil {
			progress(p)
		}
	}
	return p.Done, nil
}
