package rmq

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// recordCall counts a call, its outcome, a redelivery, a death, the lateness
// of a message with a due time and the duration, per topic and process-wide
// (the sum of the topics' shards).
func TestRecordCall(t *testing.T) {
	start := time.Unix(1000, 0)
	due := start.Add(-3 * time.Millisecond)
	cases := []struct {
		name    string
		m       Message
		outcome callOutcome
		want    Metrics // the process-wide counters
		dead    int64
		late    bool
	}{
		{name: "first delivery committed", m: Message{Attempt: 1, RetriesLeft: MaxRetries, Due: due}, outcome: callCommitted,
			want: Metrics{Delivered: 1, Committed: 1}, late: true},
		{name: "priority message committed", m: Message{Attempt: 1, RetriesLeft: MaxRetries}, outcome: callCommitted,
			want: Metrics{Delivered: 1, Committed: 1}},
		{name: "redelivery failed", m: Message{Attempt: 2, RetriesLeft: MaxRetries - 1}, outcome: callFailed,
			want: Metrics{Delivered: 1, Redelivered: 1, Failed: 1}},
		{name: "last retry failed", m: Message{Attempt: MaxRetries + 1}, outcome: callFailed,
			want: Metrics{Delivered: 1, Redelivered: 1, Failed: 1}, dead: 1},
		// Handed back, it comes again as a first delivery, whose lateness
		// counts (TestLatenessCountsAHandedBackMessageOnce).
		{name: "not owner", m: Message{Attempt: 1, RetriesLeft: MaxRetries, Due: due}, outcome: callNotOwner,
			want: Metrics{Delivered: 1, NotOwner: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm := newTopicMetrics()
			cl := &Client{topics: topicCache{byName: map[string]*topicInfo{"t": {metrics: tm}}, metrics: map[string]*topicMetrics{"t": tm}}}
			tm.shard(5).recordCall(&c.m, start, start.Add(40*time.Microsecond), c.outcome)
			assert.Equal(t, c.want, cl.Metrics(), "process-wide")
			tot := tm.totals()
			assert.Equal(t, c.want.Redelivered, tot.redelivered)
			assert.Equal(t, c.want.Committed, tot.committed)
			assert.Equal(t, c.want.Failed, tot.failed)
			assert.Equal(t, c.want.NotOwner, tot.notOwner)
			assert.Equal(t, c.dead, tot.dead)
			d := tot.duration
			assert.Equal(t, uint64(1), d.Count)
			assert.InDelta(t, 40e-6, d.Sum, 1e-9)
			l := tot.lateness
			if c.late {
				assert.Equal(t, uint64(1), l.Count)
				assert.InDelta(t, 3e-3, l.Sum, 1e-9)
			} else {
				assert.Zero(t, l.Count, "no due time or handed back: no lateness")
			}
		})
	}
}

// BenchmarkRecordDelivery measures what the metrics add to one delivery:
// recordCall, as the delivery path calls it, on a first delivery of a time
// topic (the outcome, a lateness and a duration observation), from every
// core at once, each goroutine a thread of the same topic. The target is
// under 100 ns:
//
//	go test -run X -bench RecordDelivery -benchtime 1000000x .
func BenchmarkRecordDelivery(b *testing.B) {
	tm := newTopicMetrics()
	start := time.Now()
	end := start.Add(40 * time.Microsecond)
	m := &Message{Attempt: 1, RetriesLeft: MaxRetries, Due: start.Add(-3 * time.Millisecond)}
	var threads atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		cm := tm.shard(int(threads.Add(1)))
		for pb.Next() {
			cm.recordCall(m, start, end, callCommitted)
		}
	})
}

// TestShardsAddUp: calls recorded by different threads' shards add up in
// the topic's totals, histograms included.
func TestShardsAddUp(t *testing.T) {
	tm := newTopicMetrics()
	start := time.Unix(1000, 0)
	m := &Message{Attempt: 1, RetriesLeft: MaxRetries, Due: start.Add(-time.Millisecond)}
	for i := range 3 * callShards {
		tm.shard(i).recordCall(m, start, start.Add(time.Millisecond), callCommitted)
	}
	tot := tm.totals()
	assert.EqualValues(t, 3*callShards, tot.committed)
	assert.EqualValues(t, 3*callShards, tot.lateness.Count)
	assert.EqualValues(t, 3*callShards, tot.duration.Count)
	assert.InDelta(t, 3*callShards*1e-3, tot.duration.Sum, 1e-9)
}
