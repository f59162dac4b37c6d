package rmq

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The breaker needs failures of at least half of MinCalls distinct messages
// in the last 10 s (README, Flow control: "a few poison messages failing
// again and again reach the dead set as before"). Distinct messages that
// failed long ago must not count: here ten messages fail once, then, 15 s
// later (the window long past), a single poison message, one of those ten,
// fails again and again. Only one distinct message failed in the last 10 s,
// so the breaker must stay closed; it opens, the stale entries of the
// distinct-message set counting as recent.
func TestBreakerCountsOnlyRecentDistinctFailures(t *testing.T) {
	cfg := Breaker{FailureRatio: 0.5, MinCalls: 20, OpenFor: 5 * time.Second}
	b := newBreaker(cfg, "t", slog.New(slog.DiscardHandler), time.Minute)
	t0 := time.Unix(1000, 0)
	for id := range uint64(10) {
		b.record(t0, true, id) // a blip: 10 distinct failures, 10 calls < MinCalls
	}
	require.Equal(t, BreakerClosed, b.State())

	later := t0.Add(15 * time.Second) // the blip left the 10 s window
	for i := range 30 {
		b.record(later.Add(time.Duration(i)*10*time.Millisecond), true, 0) // one poison message, again and again
	}
	assert.Equal(t, BreakerClosed, b.State(),
		"only one distinct message failed in the last 10 s; the breaker opened on stale distinct failures")

	// Control: the same with a poison message that was not among the ten stays closed.
	b2 := newBreaker(cfg, "t", slog.New(slog.DiscardHandler), time.Minute)
	for id := range uint64(10) {
		b2.record(t0, true, id)
	}
	for i := range 30 {
		b2.record(later.Add(time.Duration(i)*10*time.Millisecond), true, 99)
	}
	assert.Equal(t, BreakerClosed, b2.State(), "control")
}
