package rmq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The lateness histogram's sum holds past 292 years in all (2.6 million
// deliveries an hour late: a consumer catching up after an hour's outage),
// where its int64 of ns wrapped and went negative: TopicMetrics.Lateness.Sum,
// rmq_delivery_lateness_seconds_sum (a counter going backwards) and the
// shared figures (a negative increment) were wrong from then on.
func TestLatenessSumDoesNotWrap(t *testing.T) {
	tm := newTopicMetrics()
	cm := tm.shard(0)
	start := time.Unix(1_800_000_000, 0)
	// 2,600 deliveries 1,000 hours late add up as 2.6 million an hour late.
	const late = 1000 * time.Hour
	m := &Message{Attempt: 1, RetriesLeft: MaxRetries, Due: start.Add(-late)}
	const n = 2_600
	var before TopicMetrics
	for i := range n {
		if i == n-40 { // the sum still below 2^63 ns
			tot := tm.totals()
			before = TopicMetrics{Lateness: tot.lateness, ListenerDuration: tot.duration}
		}
		cm.recordCall(m, start, start, callCommitted)
	}
	tot := tm.totals()
	want := float64(n) * late.Seconds() // 9.36e9 s
	assert.Equal(t, uint64(n), tot.lateness.Count)
	assert.InEpsilon(t, want, tot.lateness.Sum, 0.01, "lateness sum of %d deliveries %v late", n, late)
	after := TopicMetrics{Lateness: tot.lateness, ListenerDuration: tot.duration}
	fields := deltaFields(before, after)
	assert.Equal(t, 40*int64(late/time.Microsecond), fields["lateness_sum_us"],
		"what the shared metrics add for the last 40 deliveries")
}
