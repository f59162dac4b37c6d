package rmq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A message with a due time handed back with ErrNotOwner is delivered again
// as a first delivery: its lateness counts once, at that delivery, not once
// per hand-back.
func TestLatenessCountsAHandedBackMessageOnce(t *testing.T) {
	tm := newTopicMetrics()
	cm := tm.shard(0)
	due := time.Unix(1_800_000_000, 0)
	m := &Message{Attempt: 1, RetriesLeft: MaxRetries, Due: due}
	cm.recordCall(m, due.Add(10*time.Millisecond), due.Add(11*time.Millisecond), callNotOwner)
	cm.recordCall(m, due.Add(1010*time.Millisecond), due.Add(1011*time.Millisecond), callCommitted)
	tot := tm.totals()
	assert.Equal(t, uint64(1), tot.lateness.Count, "one message, one lateness")
	assert.InDelta(t, 1.010, tot.lateness.Sum, 0.001, "the lateness of the delivery that took it")
	assert.Equal(t, uint64(2), tot.duration.Count, "two listener calls")
}
