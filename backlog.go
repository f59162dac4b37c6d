package rmq

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Backlog is what a topic holds in Redis now, by state, and how long its
// oldest due message has waited.
type Backlog struct {
	Topic string
	// Store, Retry, Prepare and Dead count the messages in each state, as
	// Stats does.
	Store, Retry, Prepare, Dead int64
	// OldestDueAge is how long ago the earliest due time still in store
	// passed, by the Redis clock: 0 if no stored message is due yet, and
	// always 0 on a Priority topic (its messages are due at once, by
	// priority). Retried messages, due at once, do not count.
	OldestDueAge time.Duration
	// Slots has the counts per slot, indexed by slot.
	Slots []SlotStats
	// Read is when the figures were read from Redis.
	Read time.Time
}

// backlogMaxAge is how long a Backlog read serves every caller: a storm of
// scrapes reads Redis at most once per topic per backlogMaxAge.
const backlogMaxAge = time.Second

// backlogCache holds the latest Backlog read per topic.
type backlogCache struct {
	mu      sync.Mutex
	byTopic map[string]*backlogEntry
}

type backlogEntry struct {
	mu   sync.Mutex // held while reading, so concurrent callers wait for one read
	last Backlog
}

// forget makes the next Backlog of topic read Redis: a write of this client
// (RequeueDead, PurgeDead, DeleteDead, DeleteTopic) changed what the last
// read says. A read under way ends first, so its figures go too.
func (bc *backlogCache) forget(topic string) {
	bc.mu.Lock()
	e := bc.byTopic[topic]
	bc.mu.Unlock()
	if e == nil {
		return
	}
	e.mu.Lock()
	e.last = Backlog{}
	e.mu.Unlock()
}

// Backlog returns topic's backlog, read with O(slots) commands in one
// pipeline (never O(messages)), and cached: a call within a second of the
// last read returns that read, unless this client's own Cancel,
// RequeueDead, PurgeDead, DeleteDead or DeleteTopic of the topic came
// since. It reads the topic's definition as this client knows it, which
// Topics and the other admin calls bring up to date when another process
// defined the topic again (the dashboard and the collector call Topics at
// every read): a backlog read costs no more round trips.
func (c *Client) Backlog(ctx context.Context, topic string) (Backlog, error) {
	if ctx == nil {
		return Backlog{}, ErrNilContext
	}
	t, err := c.lookupTopic(ctx, topic)
	if err != nil {
		return Backlog{}, err
	}
	c.backlogs.mu.Lock()
	if c.backlogs.byTopic == nil {
		c.backlogs.byTopic = make(map[string]*backlogEntry)
	}
	e := c.backlogs.byTopic[topic]
	if e == nil {
		e = &backlogEntry{}
		c.backlogs.byTopic[topic] = e
	}
	c.backlogs.mu.Unlock()

	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.last.Read.IsZero() && time.Since(e.last.Read) < backlogMaxAge {
		return e.last.copy(), nil
	}
	slots, nowMs, err := c.broker.Backlog(ctx, t.slots, t.Type != Priority)
	if err != nil {
		return Backlog{}, fmt.Errorf("rmq: backlog of topic %q: %w", topic, err)
	}
	b := Backlog{Topic: t.Name, Slots: make([]SlotStats, len(slots)), Read: time.Now()}
	oldest := int64(0)
	for i, s := range slots {
		b.Slots[i] = SlotStats{Slot: i, Store: s.Store, Retry: s.Retry, Prepare: s.Prepare, Dead: s.Dead}
		b.Store += s.Store
		b.Retry += s.Retry
		b.Prepare += s.Prepare
		b.Dead += s.Dead
		if due := s.EarliestDueMs; due > 0 && due <= nowMs && (oldest == 0 || due < oldest) {
			oldest = due
		}
	}
	if oldest > 0 {
		b.OldestDueAge = time.Duration(nowMs-oldest) * time.Millisecond
	}
	e.last = b
	return b.copy(), nil
}

// copy returns b with Slots of its own: a read serves every caller for a
// second, and one caller's changes must not show in another's.
func (b Backlog) copy() Backlog {
	b.Slots = slices.Clone(b.Slots)
	return b
}
