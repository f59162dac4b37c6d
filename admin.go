package rmq

import (
	"context"
	"fmt"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// Stats are the message counts of a topic.
type Stats struct {
	Topic      string
	Type       TopicType
	SlotAmount int
	// Store counts messages in the store sets: waiting to be due, or due and
	// not yet popped. Counts are of entries (one ZCARD a set): a RangeMerge
	// copy sent while its content waits out a retry's backoff counts here
	// and in Retry until that retry is delivered, with the copy merged into
	// it (NextDue lists it once).
	Store int64
	// Retry counts failed messages waiting out a retry backoff (the retry
	// sets); they return to store when it is over.
	Retry int64
	// Prepare counts messages handed to a consumer and not yet settled.
	Prepare int64
	// Dead counts messages whose retries ran out.
	Dead int64
	// Slots has the same counts per slot, indexed by slot.
	Slots []SlotStats
	// Paused says whether PauseTopic stopped its consumers.
	Paused bool
	// RateLimit is its rate limit (zero: unlimited).
	RateLimit RateLimit
}

// Pending counts the messages not yet delivered: Store plus Retry.
func (s Stats) Pending() int64 { return s.Store + s.Retry }

// SlotStats are the message counts of one slot.
type SlotStats struct {
	Slot                        int
	Store, Retry, Prepare, Dead int64
}

// Stats returns the message counts of topic, read in one pipeline.
func (c *Client) Stats(ctx context.Context, topic string) (Stats, error) {
	if ctx == nil {
		return Stats{}, ErrNilContext
	}
	t, counts, err := c.counts(ctx, topic)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{Topic: t.Name, Type: t.Type, SlotAmount: t.SlotAmount, Slots: make([]SlotStats, len(counts))}
	controls, err := c.loadControls(ctx)
	if err != nil {
		return Stats{}, fmt.Errorf("rmq: flow control of topic %q: %w", topic, err)
	}
	st.Paused, st.RateLimit = controls[t.Name].paused, controls[t.Name].limit
	for i, n := range counts {
		ss := SlotStats{Slot: i, Store: n.Store, Retry: n.Retry, Prepare: n.Prepare, Dead: n.Dead}
		st.Slots[i] = ss
		st.Store += ss.Store
		st.Retry += ss.Retry
		st.Prepare += ss.Prepare
		st.Dead += ss.Dead
	}
	return st, nil
}

func (c *Client) counts(ctx context.Context, topic string) (*topicInfo, []rdb.SlotCounts, error) {
	t, err := c.loadTopic(ctx, topic)
	if err != nil {
		return nil, nil, err
	}
	counts, err := c.broker.Counts(ctx, t.slots)
	if err != nil {
		return nil, nil, fmt.Errorf("rmq: stats of topic %q: %w", topic, err)
	}
	return t, counts, nil
}

// DeadMessage is a message whose retries ran out.
type DeadMessage struct {
	Topic   string
	Slot    int
	Content []byte
	Died    time.Time
}

// DeadMessages returns up to limit dead messages of topic (limit ≤ 0: all),
// slot by slot, oldest death first within a slot.
func (c *Client) DeadMessages(ctx context.Context, topic string, limit int) ([]DeadMessage, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	t, counts, err := c.counts(ctx, topic)
	if err != nil {
		return nil, err
	}
	var out []DeadMessage
	for slot, n := range counts {
		if n.Dead == 0 {
			continue
		}
		want := n.Dead
		if limit > 0 {
			want = min(want, int64(limit-len(out)))
		}
		entries, err := c.broker.Dead(ctx, t.slots[slot], want)
		if err != nil {
			return nil, fmt.Errorf("rmq: dead messages of topic %q slot %d: %w", topic, slot, err)
		}
		for _, e := range entries {
			out = append(out, DeadMessage{Topic: t.Name, Slot: slot, Content: e.Member, Died: time.UnixMilli(e.DiedMs)})
		}
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	return out, nil
}

// RequeueDead moves dead messages of topic back to pending with fresh retries
// (all of them when no content is given, as with an empty slice: a caller
// passing a selection checks it is not empty; else only the given
// contents) and returns how many moved. They
// are due at once; on a Priority topic they rank below every fresh priority.
// A content that is also pending merges with it, with fresh retries: it
// keeps that copy's due time or priority (one waiting out a retry backoff:
// the retry's due time).
// See RequeueDeadProgress to follow a large requeue.
func (c *Client) RequeueDead(ctx context.Context, topic string, contents ...[]byte) (int64, error) {
	return c.RequeueDeadProgress(ctx, topic, nil, contents...)
}

// PurgeDead deletes every dead message of topic and returns how many. See
// PurgeDeadProgress to follow a large purge.
func (c *Client) PurgeDead(ctx context.Context, topic string) (int64, error) {
	return c.PurgeDeadProgress(ctx, topic, nil)
}
