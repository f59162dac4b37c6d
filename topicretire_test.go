package rmq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The compact copy kept of a deleted topic's metrics holds every figure of
// the live ones, and a topic defined again under the name counts on from
// them in shards of its own: TopicMetrics counts since New, whatever became
// of the definition.
func TestRetiredMetricsKeepEveryFigure(t *testing.T) {
	tm := newTopicMetrics()
	tm.sent.Add(7)
	start := time.Now()
	for i := range 40 {
		m := &Message{Attempt: 1 + i%3, Due: start.Add(-time.Duration(i) * time.Millisecond), RetriesLeft: i % 2}
		tm.shard(i).recordCall(m, start, start.Add(time.Duration(i)*time.Millisecond), callOutcome(i%3))
	}
	tm.shard(5).recordRestored(3)
	before := tm.totals()

	r := tm.retire()
	require.True(t, r.retired)
	for i := 1; i < callShards; i++ {
		assert.Nil(t, r.calls[i], "shard %d of the compact copy", i)
	}
	sameTotals(t, before, r.totals())
	assert.Equal(t, int64(7), r.sent.Load())

	live := r.revive()
	assert.False(t, live.retired)
	sameTotals(t, before, live.totals()) // defined again: counting on from the deleted one's figures
	live.sent.Add(1)
	for i := range callShards {
		m := &Message{Attempt: 1, Due: start}
		live.shard(i).recordCall(m, start, start.Add(time.Millisecond), callCommitted)
	}
	after := live.totals()
	assert.Equal(t, int64(8), live.sent.Load())
	assert.Equal(t, before.committed+callShards, after.committed)
	assert.Equal(t, before.lateness.Count+callShards, after.lateness.Count)
	assert.Equal(t, before.duration.Count+callShards, after.duration.Count)
	assert.InDelta(t, before.duration.Sum+callShards*0.001, after.duration.Sum, 1e-9)

	idle := newTopicMetrics()
	idle.sent.Add(2)
	ri := idle.retire()
	for i := range callShards {
		assert.Nil(t, ri.calls[i], "a topic that counted no call keeps no shard")
	}
	sameTotals(t, idle.totals(), ri.totals())
	sameTotals(t, idle.totals(), ri.revive().totals())

	// The process-wide counts read the compact copies too (Metrics: their
	// nil shards panicked, under the cache's lock, which the collector's
	// recovery then left held).
	cache := topicCache{metrics: map[string]*topicMetrics{"gone": r, "idle": ri}}
	var out Metrics
	cache.sumCalls(&out)
	assert.Equal(t, before.committed, out.Committed)
	assert.Equal(t, before.failed, out.Failed)
	assert.Equal(t, before.restored, out.Restored)
}

// sameTotals asserts that got holds the figures of want: the histograms'
// sums to a nanosecond (summed over shards, or held as one).
func sameTotals(t *testing.T, want, got callTotals) {
	t.Helper()
	assert.InDelta(t, want.lateness.Sum, got.lateness.Sum, 1e-9)
	assert.InDelta(t, want.duration.Sum, got.duration.Sum, 1e-9)
	want.lateness.Sum, got.lateness.Sum, want.duration.Sum, got.duration.Sum = 0, 0, 0, 0
	assert.Equal(t, want, got)
}
