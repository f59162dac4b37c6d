package rmq

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The breaker counts every move by the state moved to: closed → open (the
// window's failures), open → half-open (first look after OpenFor),
// half-open → open (a failed probe), half-open → closed (3 good probes).
func TestBreakerCountsEveryMove(t *testing.T) {
	cfg := Breaker{FailureRatio: 0.5, MinCalls: 4, OpenFor: time.Second}
	b := newBreaker(cfg, "t", slog.New(slog.DiscardHandler), time.Minute)
	now := time.Unix(1000, 0)
	moves := func() map[string]int64 { return b.transitions() }
	probe := func(failed bool) {
		t.Helper()
		ok, isProbe, _ := b.allow(now)
		require.True(t, ok)
		require.True(t, isProbe)
		b.record(now, failed, 99)
	}
	steps := []struct {
		name  string
		do    func()
		state string
		want  map[string]int64
	}{
		{"closed at first", func() {}, BreakerClosed, map[string]int64{BreakerOpen: 0, BreakerHalfOpen: 0, BreakerClosed: 0}},
		{"four failures of distinct messages open it", func() {
			for id := range uint64(4) {
				b.record(now, true, id)
			}
		}, BreakerOpen, map[string]int64{BreakerOpen: 1, BreakerHalfOpen: 0, BreakerClosed: 0}},
		{"held back while open", func() {
			ok, _, until := b.allow(now.Add(500 * time.Millisecond))
			assert.False(t, ok)
			assert.Equal(t, now.Add(time.Second), until)
		}, BreakerOpen, map[string]int64{BreakerOpen: 1, BreakerHalfOpen: 0, BreakerClosed: 0}},
		{"after OpenFor the next look probes", func() {
			now = now.Add(time.Second)
			probe(false)
		}, BreakerHalfOpen, map[string]int64{BreakerOpen: 1, BreakerHalfOpen: 1, BreakerClosed: 0}},
		{"a failed probe opens it again", func() { probe(true) },
			BreakerOpen, map[string]int64{BreakerOpen: 2, BreakerHalfOpen: 1, BreakerClosed: 0}},
		{"three good probes close it", func() {
			now = now.Add(time.Second)
			for range breakerProbes {
				probe(false)
			}
		}, BreakerClosed, map[string]int64{BreakerOpen: 2, BreakerHalfOpen: 2, BreakerClosed: 1}},
	}
	for _, s := range steps {
		s.do()
		assert.Equal(t, s.state, b.State(), s.name)
		assert.Equal(t, s.want, moves(), s.name)
	}
}

// A probe that never reports an outcome (a path that misses probeDone) ends
// on its own after probeFor: a half-open breaker never holds its topic back
// for good. One that ended with probeDone lets the next pop probe at once.
func TestBreakerProbeEndsWithoutAnOutcome(t *testing.T) {
	cfg := Breaker{FailureRatio: 0.5, MinCalls: 4, OpenFor: time.Second}
	b := newBreaker(cfg, "t", slog.New(slog.DiscardHandler), 10*time.Second)
	now := time.Unix(1000, 0)
	for i := range 4 {
		b.record(now, true, uint64(i))
	}
	require.Equal(t, BreakerOpen, b.State())
	now = now.Add(2 * time.Second)
	ok, probe, _ := b.allow(now)
	require.True(t, ok && probe)
	ok, _, _ = b.allow(now.Add(time.Second))
	assert.False(t, ok, "a second probe while the first is in flight")
	b.probeDone()
	ok, probe, _ = b.allow(now.Add(time.Second))
	require.True(t, ok && probe, "the probe ended without an outcome: probe again")
	ok, _, _ = b.allow(now.Add(9 * time.Second))
	assert.False(t, ok)
	ok, probe, _ = b.allow(now.Add(12 * time.Second))
	assert.True(t, ok && probe, "a probe silent for probeFor counts as ended")
}
