package rmq

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Each client adds what its TopicMetrics gained to the namespace's shared
// metrics in Redis every statsFlushEvery (and when it closes), so that the
// figures of every process add up where the CLI and the dashboard read them
// (NamespaceMetrics). One script call per flush, O(topics), and none while
// nothing changed; and a pipeline more while one of its breakers is not
// closed (breakershare.go).
const statsFlushEvery = 2 * time.Second

// MinuteMetrics are what every process of the namespace reported for one
// topic in one minute.
type MinuteMetrics struct {
	Minute                             time.Time
	Sent, Delivered, Committed, Failed int64
	Lateness                           Histogram
	// BreakerOpened counts the times a process's breaker opened, and
	// BreakerTransitions its moves by the state moved to; HeldBack the slot
	// turns held back, by reason (all as in TopicMetrics).
	BreakerOpened      int64
	BreakerTransitions map[string]int64
	HeldBack           map[string]int64
}

// MaxMetricsMinutes bounds NamespaceMetrics' minutes: a day. The per-minute
// figures are kept two hours; older minutes read as zero.
const MaxMetricsMinutes = 24 * 60

// NamespaceMetrics returns topic's metrics summed over every process of the
// namespace since it began (as flushed: up to a few seconds behind), and
// per minute for the last minutes (oldest first, the current minute last;
// at least one, at most MaxMetricsMinutes, else ErrInvalidOption).
// OwnedSlots and Breaker (a process's own state) are not set.
func (c *Client) NamespaceMetrics(ctx context.Context, topic string, minutes int) (TopicMetrics, []MinuteMetrics, error) {
	if ctx == nil {
		return TopicMetrics{}, nil, ErrNilContext
	}
	if minutes < 1 || minutes > MaxMetricsMinutes {
		return TopicMetrics{}, nil, fmt.Errorf("%w: %d minutes of metrics, 1..%d", ErrInvalidOption, minutes, MaxMetricsMinutes)
	}
	t, err := c.lookupTopic(ctx, topic)
	if err != nil {
		return TopicMetrics{}, nil, err
	}
	now := time.Now().Unix() / 60
	from := now - int64(minutes) + 1
	total, perMinute, err := c.broker.Stats(ctx, t.Name, from, now)
	if err != nil {
		return TopicMetrics{}, nil, fmt.Errorf("rmq: metrics of topic %q: %w", topic, err)
	}
	m := TopicMetrics{Topic: t.Name, Type: t.Type, Sent: total["sent"], Delivered: total["delivered"],
		Redelivered: total["redelivered"], Committed: total["committed"], Failed: total["failed"],
		NotOwner: total["not_owner"], Restored: total["restored"], Dead: total["dead"],
		Lateness: histogramOf(total, "lateness", LatenessBuckets), ListenerDuration: histogramOf(total, "duration", DurationBuckets),
		BreakerOpened: total["breaker_opened"], BreakerTransitions: transitionsOf(total), HeldBack: heldBackOf(total)}
	out := make([]MinuteMetrics, len(perMinute))
	for i, f := range perMinute {
		out[i] = MinuteMetrics{Minute: time.Unix((from+int64(i))*60, 0), Sent: f["sent"], Delivered: f["delivered"],
			Committed: f["committed"], Failed: f["failed"], Lateness: histogramOf(f, "lateness", LatenessBuckets),
			BreakerOpened: f["breaker_opened"], BreakerTransitions: transitionsOf(f), HeldBack: heldBackOf(f)}
	}
	return m, out, nil
}

// heldBackReasons are TopicMetrics.HeldBack's keys.
var heldBackReasons = []string{"pause", "limit", "breaker"}

// heldBackOf reads the held-back counts from shared metric fields.
func heldBackOf(f map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(heldBackReasons))
	for _, r := range heldBackReasons {
		out[r] = f["held_"+r]
	}
	return out
}

// transitionFields are the shared metric fields of the breaker's moves, by
// the state moved to.
var transitionFields = map[string]string{BreakerOpen: "breaker_opened", BreakerHalfOpen: "breaker_half_opened",
	BreakerClosed: "breaker_closed"}

// transitionsOf reads the breaker's moves from shared metric fields.
func transitionsOf(f map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(transitionFields))
	for state, field := range transitionFields {
		out[state] = f[field]
	}
	return out
}

// histogramOf reads a histogram from shared metric fields.
func histogramOf(f map[string]int64, name string, bounds []float64) Histogram {
	h := Histogram{Bounds: slices.Clone(bounds), Counts: make([]uint64, len(bounds)+1)}
	for i := range h.Counts {
		h.Counts[i] = uint64(max(f[name+"_"+strconv.Itoa(i)], 0))
		h.Count += h.Counts[i]
	}
	h.Sum = float64(f[name+"_sum_us"]) / 1e6
	return h
}

// deltaFields returns the shared metric fields that grew from old to m.
func deltaFields(old, m TopicMetrics) map[string]int64 {
	fields := make(map[string]int64)
	add := func(name string, n int64) {
		if n != 0 {
			fields[name] = n
		}
	}
	add("sent", m.Sent-old.Sent)
	add("delivered", m.Delivered-old.Delivered)
	add("redelivered", m.Redelivered-old.Redelivered)
	add("committed", m.Committed-old.Committed)
	add("failed", m.Failed-old.Failed)
	add("not_owner", m.NotOwner-old.NotOwner)
	add("restored", m.Restored-old.Restored)
	add("dead", m.Dead-old.Dead)
	for state, field := range transitionFields {
		add(field, m.BreakerTransitions[state]-old.BreakerTransitions[state])
	}
	for _, r := range heldBackReasons {
		add("held_"+r, m.HeldBack[r]-old.HeldBack[r])
	}
	addHistogram := func(name string, h, o Histogram) {
		for i := range h.Counts {
			var before uint64
			if i < len(o.Counts) {
				before = o.Counts[i]
			}
			add(name+"_"+strconv.Itoa(i), int64(h.Counts[i]-before))
		}
		add(name+"_sum_us", int64((h.Sum-o.Sum)*1e6))
	}
	addHistogram("lateness", m.Lateness, old.Lateness)
	addHistogram("duration", m.ListenerDuration, old.ListenerDuration)
	return fields
}
