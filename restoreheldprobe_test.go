package rmq

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
)

// A slot let go with messages held ahead (restoreHeld: a release, a pause,
// a rate limit set) does not end the topic's half-open probe: no probe is
// ever held ahead (a probe's pop reaches no further than now), so the probe
// in flight is another slot's, and ending it let a second probe start
// beside it.
func TestRestoringHeldMessagesLeavesAnotherSlotsProbe(t *testing.T) {
	b := newBreaker(Breaker{FailureRatio: 0.5, MinCalls: 1, OpenFor: time.Millisecond}, "t", slog.New(slog.DiscardHandler), time.Minute)
	now := time.Now()
	b.mu.Lock()
	b.trip(now, "test")
	b.mu.Unlock()
	ok, probe, _ := b.allow(now.Add(10 * time.Millisecond))
	require.True(t, ok && probe, "the first look after OpenFor probes")

	th := &thread{sub: &subscription{topic: &topicInfo{metrics: newTopicMetrics()}, flow: flow{breaker: b}}}
	s := &slotState{held: []heldMsg{{d: rdb.Delivery{Member: []byte("held")}}}}
	th.restoreHeld(s)
	assert.Len(t, s.pending, 1, "the held message goes back")
	ok, _, _ = b.allow(now.Add(20 * time.Millisecond))
	assert.False(t, ok, "a second probe beside the one in flight")
}
