package rmq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// recordCall counts a call, its outcome, a redelivery, a death, the lateness
// of a message with a due time and the duration, per topic and process-wide.
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
		{name: "not owner", m: Message{Attempt: 1, RetriesLeft: MaxRetries, Due: due}, outcome: callNotOwner,
			want: Metrics{Delivered: 1, NotOwner: 1}, late: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tm, cl := newTopicMetrics(), &Client{}
			tm.recordCall(&cl.counters, &c.m, start, start.Add(40*time.Microsecond), c.outcome)
			assert.Equal(t, c.want, cl.Metrics(), "process-wide")
			assert.Equal(t, c.want.Redelivered, tm.redelivered.Load())
			assert.Equal(t, c.want.Committed, tm.committed.Load())
			assert.Equal(t, c.want.Failed, tm.failed.Load())
			assert.Equal(t, c.want.NotOwner, tm.notOwner.Load())
			assert.Equal(t, c.dead, tm.dead.Load())
			d := tm.duration.snapshot()
			assert.Equal(t, uint64(1), d.Count)
			assert.InDelta(t, 40e-6, d.Sum, 1e-9)
			l := tm.lateness.snapshot()
			if c.late {
				assert.Equal(t, uint64(1), l.Count)
				assert.InDelta(t, 3e-3, l.Sum, 1e-9)
			} else {
				assert.Zero(t, l.Count, "no due time, no lateness")
			}
		})
	}
}

// BenchmarkRecordDelivery measures what the metrics add to one delivery:
// recordCall, as the delivery path calls it, on a first delivery of a time
// topic (process-wide and topic counters, a lateness and a duration
// observation), from every core at once. The target is under 100 ns:
//
//	go test -run X -bench RecordDelivery -benchtime 1000000x .
func BenchmarkRecordDelivery(b *testing.B) {
	tm, pc := newTopicMetrics(), &counters{}
	start := time.Now()
	end := start.Add(40 * time.Microsecond)
	m := &Message{Attempt: 1, RetriesLeft: MaxRetries, Due: start.Add(-3 * time.Millisecond)}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tm.recordCall(pc, m, start, end, callCommitted)
		}
	})
}
