package rmq

import (
	"slices"
	"strings"
	"sync/atomic"
)

// TopicMetrics are one topic's counters and histograms in this process
// since New: the producer's for every topic it sent to, the consumers' for
// every subscribed topic. Backlogs live in Redis: see Client.Backlog.
type TopicMetrics struct {
	Topic string
	Type  TopicType
	// Sent counts messages stored by Send and SendBatch.
	Sent int64
	// Delivered counts listener calls; Redelivered those of a message
	// delivered before (Attempt > 1).
	Delivered, Redelivered int64
	// Outcomes of listener calls and popped messages: committed (the
	// listener returned nil), failed (an error or a panic: rolled back),
	// not owner (ErrNotOwner: handed back unchanged), restored (popped but
	// handed back unstarted: a revoked slot, a shutdown, a long batch).
	Committed, Failed, NotOwner, Restored int64
	// Dead counts messages that ran out of retries in this process's
	// listeners (not those whose last delivery timed out).
	Dead int64
	// Lateness is listener start minus due time, for first deliveries on
	// RangeMerge and FixedTime topics.
	Lateness Histogram
	// ListenerDuration is how long listener calls took.
	ListenerDuration Histogram
	// OwnedSlots is how many of the topic's slots this process owns now.
	OwnedSlots int
	// Breaker is the state of this process's breaker for the topic:
	// BreakerClosed, BreakerOpen, BreakerHalfOpen, or BreakerOff (disabled,
	// or not subscribed); BreakerOpened counts the times it opened.
	Breaker       string
	BreakerOpened int64
	// HeldBack counts the times a due slot was held back, by reason: "pause",
	// "limit" (no token of the rate limit), "breaker" (open or probing).
	HeldBack map[string]int64
}

// topicMetrics backs TopicMetrics: lock-free on the hot path.
type topicMetrics struct {
	sent, delivered, redelivered          atomic.Int64
	committed, failed, notOwner, restored atomic.Int64
	dead                                  atomic.Int64
	lateness, duration                    *histogram
}

func newTopicMetrics() *topicMetrics {
	return &topicMetrics{lateness: newHistogram(LatenessBuckets), duration: newHistogram(DurationBuckets)}
}

// TopicMetrics returns the metrics of every topic this client sent to,
// subscribed to, or looked up, sorted by name.
func (c *Client) TopicMetrics() []TopicMetrics {
	c.topics.mu.RLock()
	infos := make([]*topicInfo, 0, len(c.topics.byName))
	for _, t := range c.topics.byName {
		infos = append(infos, t)
	}
	c.topics.mu.RUnlock()
	slices.SortFunc(infos, func(a, b *topicInfo) int { return strings.Compare(a.Name, b.Name) })
	c.mu.Lock()
	subs := c.subs
	c.mu.Unlock()
	out := make([]TopicMetrics, len(infos))
	for i, t := range infos {
		m := t.metrics
		out[i] = TopicMetrics{Topic: t.Name, Type: t.Type,
			Sent: m.sent.Load(), Delivered: m.delivered.Load(), Redelivered: m.redelivered.Load(),
			Committed: m.committed.Load(), Failed: m.failed.Load(), NotOwner: m.notOwner.Load(),
			Restored: m.restored.Load(), Dead: m.dead.Load(),
			Lateness: m.lateness.snapshot(), ListenerDuration: m.duration.snapshot()}
		out[i].Breaker = BreakerOff
		if s := subs[t.Name]; s != nil {
			out[i].OwnedSlots = int(s.owned.Load())
			f := &s.flow
			if f.breaker != nil {
				out[i].Breaker, out[i].BreakerOpened = f.breaker.State(), f.breaker.opened.Load()
			}
			out[i].HeldBack = map[string]int64{"pause": f.heldPause.Load(), "limit": f.heldLimit.Load(),
				"breaker": f.heldBreaker.Load()}
		}
	}
	return out
}
