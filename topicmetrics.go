package rmq

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// TopicMetrics are one topic's counters and histograms in this process
// since New: the producer's for every topic it sent to, the consumers' for
// every subscribed topic. Backlogs live in Redis: see Client.Backlog.
type TopicMetrics struct {
	Topic string
	Type  TopicType
	// Sent counts messages stored by Send and SendBatch.
	Sent int64
	// Delivered counts listener calls that returned (Committed + Failed +
	// NotOwner); Redelivered those of a message delivered before (Attempt > 1).
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
	// or not subscribed). BreakerTransitions counts its moves by the state
	// moved to: BreakerOpen (from closed, when the failures of the window
	// pass the threshold; or from half-open, when a probe fails),
	// BreakerHalfOpen (the first time a slot looks once OpenFor has passed),
	// BreakerClosed (after the probes succeeded); nil when it is off. Every
	// move is also logged at warn level. BreakerOpened is
	// BreakerTransitions[BreakerOpen].
	Breaker            string
	BreakerOpened      int64
	BreakerTransitions map[string]int64
	// HeldBack counts slot turns held back, by reason: the times one of the
	// topic's slots came up for a pop in this process (a due time, a
	// wake-up or the idle poll) and was not popped because of "pause",
	// "limit" (no token of the rate limit), "breaker" (open, or half-open
	// with its one probe in flight). It counts turns, not messages nor
	// deliveries: a paused slot counts about once a second whether or not
	// messages wait in it, an open breaker about once per slot per opening.
	HeldBack map[string]int64
}

// topicMetrics backs TopicMetrics: lock-free on the hot path.
type topicMetrics struct {
	sent, redelivered                     atomic.Int64
	committed, failed, notOwner, restored atomic.Int64 // a listener call counts once in committed, failed or notOwner
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
			Sent: m.sent.Load(), Redelivered: m.redelivered.Load(),
			Committed: m.committed.Load(), Failed: m.failed.Load(), NotOwner: m.notOwner.Load(),
			Restored: m.restored.Load(), Dead: m.dead.Load(),
			Lateness: m.lateness.snapshot(), ListenerDuration: m.duration.snapshot()}
		out[i].Delivered = out[i].Committed + out[i].Failed + out[i].NotOwner
		out[i].Breaker = BreakerOff
		if s := subs[t.Name]; s != nil {
			out[i].OwnedSlots = int(s.owned.Load())
			f := &s.flow
			if f.breaker != nil {
				out[i].Breaker, out[i].BreakerTransitions = f.breaker.State(), f.breaker.transitions()
				out[i].BreakerOpened = out[i].BreakerTransitions[BreakerOpen]
			}
			out[i].HeldBack = map[string]int64{"pause": f.heldPause.Load(), "limit": f.heldLimit.Load(),
				"breaker": f.heldBreaker.Load()}
		}
	}
	return out
}

// callOutcome is how a listener call ended, for the metrics.
type callOutcome uint8

const (
	callCommitted callOutcome = iota // nil: committed
	callFailed                       // an error or a panic: rolled back
	callNotOwner                     // ErrNotOwner: handed back unchanged
)

// recordCall adds one listener call of m, from start to end, to the topic's
// metrics and the process-wide counters pc: the call and its outcome, a
// redelivery, the lateness of a message with a due time, the duration, and
// a death when a failed call spent the last retry (the calls themselves are
// the sum of the outcomes). It is everything the delivery path records per
// message: six atomic additions on a first delivery, no lock.
func (tm *topicMetrics) recordCall(pc *counters, m *Message, start, end time.Time, o callOutcome) {
	if m.Attempt > 1 {
		pc.redelivered.Add(1)
		tm.redelivered.Add(1)
	}
	if !m.Due.IsZero() {
		tm.lateness.observe(start.Sub(m.Due))
	}
	tm.duration.observe(end.Sub(start))
	switch o {
	case callCommitted:
		pc.committed.Add(1)
		tm.committed.Add(1)
	case callNotOwner:
		pc.notOwner.Add(1)
		tm.notOwner.Add(1)
	case callFailed:
		pc.failed.Add(1)
		tm.failed.Add(1)
		if m.RetriesLeft == 0 {
			tm.dead.Add(1)
		}
	}
}

// recordRestored counts n popped messages handed back unstarted.
func (tm *topicMetrics) recordRestored(pc *counters, n int64) {
	pc.restored.Add(n)
	tm.restored.Add(n)
}
