package rmq

import (
	"maps"
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
	// RangeMerge and FixedTime topics (a message handed back with
	// ErrNotOwner counts at its next delivery, once).
	Lateness Histogram
	// ListenerDuration is how long listener calls took.
	ListenerDuration Histogram
	// OwnedSlots is how many of the topic's slots this process owns now.
	OwnedSlots int
	// DeclinedSlots is how many of the topic's slots this process declines
	// now: their Cluster master has not answered it for a few seconds, so
	// the coordinator moves them to processes that reach it (0 on a single
	// node, and with a coordinator that does not honour declines).
	DeclinedSlots int
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

// topicMetrics backs TopicMetrics: lock-free on the hot path. What the
// delivery path records is split into callShards shards, one per consumer
// thread (thread index modulo callShards), each allocated on cache lines of
// its own, so that threads on different cores do not contend for the same
// counters; readers sum the shards.
type topicMetrics struct {
	sent  atomic.Int64
	calls [callShards]*callMetrics
	// retired marks the compact copy kept of a deleted topic's metrics
	// (retire): its counts in the first shard, or none when it counted no
	// call, the other shards nil. Nothing records into it; a topic defined
	// again under its name records into its revived copy (revive).
	retired bool
}

// callShards is how many shards a topic's delivery metrics have.
const callShards = 8

// callMetrics is one shard of a topic's delivery metrics.
type callMetrics struct {
	redelivered                           atomic.Int64
	committed, failed, notOwner, restored atomic.Int64 // a listener call counts once in committed, failed or notOwner
	dead                                  atomic.Int64
	lateness, duration                    *histogram
	_                                     [64]byte // keeps the next allocation off these lines
}

func newTopicMetrics() *topicMetrics {
	tm := &topicMetrics{}
	for i := range tm.calls {
		tm.calls[i] = &callMetrics{lateness: newHistogram(LatenessBuckets), duration: newHistogram(DurationBuckets)}
	}
	return tm
}

// shard returns the shard of consumer thread i.
func (tm *topicMetrics) shard(i int) *callMetrics { return tm.calls[uint(i)%callShards] }

// callTotals are the delivery metrics of a topic, summed over its shards.
type callTotals struct {
	redelivered, committed, failed, notOwner, restored, dead int64
	lateness, duration                                       Histogram
}

// totals sums the shards (a retired copy's nil ones count nothing).
func (tm *topicMetrics) totals() callTotals {
	t := callTotals{lateness: emptyHistogram(LatenessBuckets), duration: emptyHistogram(DurationBuckets)}
	for _, cm := range tm.calls {
		if cm == nil {
			continue
		}
		t.redelivered += cm.redelivered.Load()
		t.committed += cm.committed.Load()
		t.failed += cm.failed.Load()
		t.notOwner += cm.notOwner.Load()
		t.restored += cm.restored.Load()
		t.dead += cm.dead.Load()
		t.lateness.add(cm.lateness.snapshot())
		t.duration.add(cm.duration.snapshot())
	}
	return t
}

// retire returns the compact copy of tm kept once its topic is deleted: a
// client that makes and deletes topics of new names keeps a few hundred
// bytes of each (with what its metrics flush keeps: lean), where the eight
// shards of a live topic's metrics take about 7 KB. Its figures go on
// counting since New for a topic defined again under the name (revive).
// What a Send racing the deletion records into tm after the copy is not
// kept (stop the producers first: DeleteTopic).
func (tm *topicMetrics) retire() *topicMetrics {
	r := &topicMetrics{retired: true}
	r.sent.Store(tm.sent.Load())
	t := tm.totals()
	if t.redelivered|t.committed|t.failed|t.notOwner|t.restored|t.dead != 0 || t.lateness.Count|t.duration.Count != 0 {
		r.calls[0] = callMetricsOf(t)
	}
	return r
}

// revive returns the live metrics of a topic defined again whose deleted
// predecessor's are r (retire): they go on from r's figures.
func (r *topicMetrics) revive() *topicMetrics {
	tm := newTopicMetrics()
	tm.sent.Store(r.sent.Load())
	if r.calls[0] != nil {
		tm.calls[0] = callMetricsOf(r.totals()) // a copy: r stays as it was
	}
	return tm
}

// callMetricsOf returns a shard holding the figures t.
func callMetricsOf(t callTotals) *callMetrics {
	cm := &callMetrics{lateness: restoredHistogram(LatenessBuckets, t.lateness), duration: restoredHistogram(DurationBuckets, t.duration)}
	cm.redelivered.Store(t.redelivered)
	cm.committed.Store(t.committed)
	cm.failed.Store(t.failed)
	cm.notOwner.Store(t.notOwner)
	cm.restored.Store(t.restored)
	cm.dead.Store(t.dead)
	return cm
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
	subs := maps.Clone(c.subs) // Subscribe may add to it meanwhile
	c.mu.Unlock()
	out := make([]TopicMetrics, len(infos))
	for i, t := range infos {
		m := t.metrics.totals()
		out[i] = TopicMetrics{Topic: t.Name, Type: t.Type,
			Sent: t.metrics.sent.Load(), Redelivered: m.redelivered,
			Committed: m.committed, Failed: m.failed, NotOwner: m.notOwner,
			Restored: m.restored, Dead: m.dead,
			Lateness: m.lateness, ListenerDuration: m.duration}
		out[i].Delivered = out[i].Committed + out[i].Failed + out[i].NotOwner
		out[i].Breaker = BreakerOff
		out[i].DeclinedSlots = c.declines.Count(t.Name)
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

// recordCall adds one listener call of m, from start to end, to the
// shard's metrics: the call and its outcome, a redelivery, the lateness of a
// message with a due time, the duration, and a death when a failed call
// spent the last retry (the calls themselves are the sum of the outcomes;
// the process-wide counters are the sums over topics). It is everything the
// delivery path records per message: four atomic additions on a first
// delivery, no lock, on lines no other thread of the topic writes.
func (cm *callMetrics) recordCall(m *Message, start, end time.Time, o callOutcome) {
	if m.Attempt > 1 {
		cm.redelivered.Add(1)
	}
	if !m.Due.IsZero() && o != callNotOwner {
		// A message handed back comes again as a first delivery: its
		// lateness is that one's, counted once.
		cm.lateness.observe(start.Sub(m.Due))
	}
	cm.duration.observe(end.Sub(start))
	switch o {
	case callCommitted:
		cm.committed.Add(1)
	case callNotOwner:
		cm.notOwner.Add(1)
	case callFailed:
		cm.failed.Add(1)
		if m.RetriesLeft == 0 {
			cm.dead.Add(1)
		}
	}
}

// recordRestored counts n popped messages handed back unstarted.
func (cm *callMetrics) recordRestored(n int64) { cm.restored.Add(n) }

// topicMetricsOf returns TopicMetrics' entry of topic (only its name when it
// has none).
func (c *Client) topicMetricsOf(topic string) TopicMetrics {
	for _, m := range c.TopicMetrics() {
		if m.Topic == topic {
			return m
		}
	}
	return TopicMetrics{Topic: topic}
}
