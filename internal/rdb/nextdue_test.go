package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// When the slot next needs a look after a due-order pop: at once after a full
// batch, else at the first store entry not due (past the lookahead window),
// or when the deliveries time out if the store holds nothing more.
func TestCycleNextDueAfterAPop(t *testing.T) {
	const timeout = 30 * time.Second
	cases := []struct {
		name  string
		store map[string]float64 // offsets from now, ms
		max   int
		ahead time.Duration
		take  []string
		next  func(res CycleResult, now float64) float64
	}{
		{"a pop that ends early looks again at the first entry not due",
			map[string]float64{"a": -20, "b": -10, "later": 5_000}, 10, 0, []string{"a", "b"},
			func(_ CycleResult, now float64) float64 { return now + 5_000 }},
		{"a full batch looks again at once",
			map[string]float64{"a": -20, "b": -10, "later": 5_000}, 2, 0, []string{"a", "b"},
			func(res CycleResult, _ float64) float64 { return float64(res.NowMs) }},
		{"a batch that took the last due entry looks again at once",
			map[string]float64{"a": -20, "b": -10}, 2, 0, []string{"a", "b"},
			func(res CycleResult, _ float64) float64 { return float64(res.NowMs) }},
		{"more due than the batch looks again at once",
			map[string]float64{"a": -30, "b": -20, "c": -10}, 2, 0, []string{"a", "b"},
			func(res CycleResult, _ float64) float64 { return float64(res.NowMs) }},
		{"an emptied store looks again when the deliveries time out",
			map[string]float64{"a": -20}, 10, 0, []string{"a"},
			func(res CycleResult, _ float64) float64 {
				return float64((res.NowMs/1000 + int64(timeout/time.Second) + 1) * 1000)
			}},
		{"a lookahead pop looks again at the first entry past its window",
			map[string]float64{"a": -10, "soon": 1_000, "later": 5_000}, 10, 2 * time.Second, []string{"a", "soon"},
			func(_ CycleResult, now float64) float64 { return now + 5_000 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
				f := newFixture(t, b)
				now := nowMs()
				for m, off := range c.store {
					f.zadd(f.keys.Store, now+off, m)
				}
				res := f.cycle(CycleRequest{Max: c.max, Ahead: c.ahead, Timeout: timeout})
				require.Equal(t, c.take, members(res.Deliveries))
				assert.InDelta(t, c.next(res, now), float64(res.NextMs), 1)
			})
		})
	}
}

// An entry held back because its content is still in prepare is the next
// look when it falls due later than now, as it was before the pop.
func TestCycleNextDueWithAHeldBackEntry(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		now := nowMs()
		f.zadd(f.keys.Store, now-10, "m")
		res := f.cycle(CycleRequest{Max: 1})
		require.Equal(t, []string{"m"}, members(res.Deliveries))

		f.zadd(f.keys.Store, now+1_000, "m") // a new copy, due within the window
		f.zadd(f.keys.Store, now+3_000, "n")
		f.zadd(f.keys.Store, now+9_000, "later")
		res = f.cycle(CycleRequest{Max: 10, Ahead: 5 * time.Second})
		require.Equal(t, []string{"n"}, members(res.Deliveries), "m waits for its copy in prepare")
		assert.InDelta(t, now+1_000, float64(res.NextMs), 1, "the held-back copy's due time")

		f.zadd(f.keys.Store, now-5, "m") // now due: it waits for the settle, not for a time
		res = f.cycle(CycleRequest{Max: 10})
		assert.Empty(t, res.Deliveries)
		assert.InDelta(t, now+9_000, float64(res.NextMs), 1, "the first entry later than now")
	})
}

// The prepare expiry a pop reports is the earliest over the entries held
// before it, those it added (popped ahead, they expire from their due
// second), and what a reclaim left.
func TestCycleNextDueIsTheEarliestPrepareExpiry(t *testing.T) {
	const timeout = 30 * time.Second
	expiry := func(sec int64) int64 { return (sec + int64(timeout/time.Second) + 1) * 1000 }
	t.Run("an entry held before the pop", func(t *testing.T) {
		testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
			f := newFixture(t, b)
			sec := int64(nowMs()) / 1000
			f.zadd(f.keys.Prepare, float64((sec-5)*1000+MaxRetries), "old")
			f.zadd(f.keys.Store, nowMs()-10, "a")
			res := f.cycle(CycleRequest{Max: 10, Timeout: timeout})
			require.Equal(t, []string{"a"}, members(res.Deliveries))
			assert.Equal(t, expiry(sec-5), res.NextMs)
		})
	})
	t.Run("entries popped ahead", func(t *testing.T) {
		testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
			f := newFixture(t, b)
			due := int64(nowMs()) + 1_500
			f.zadd(f.keys.Store, float64(due), "soon")
			res := f.cycle(CycleRequest{Max: 10, Ahead: 2 * time.Second, Timeout: timeout})
			require.Equal(t, []string{"soon"}, members(res.Deliveries))
			assert.LessOrEqual(t, res.NextMs, expiry(due/1000), "no later than the entry can expire")
			assert.GreaterOrEqual(t, res.NextMs, expiry(res.NowMs/1000))
		})
	})
	t.Run("what a reclaim left", func(t *testing.T) {
		testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
			f := newFixture(t, b)
			sec := int64(nowMs()) / 1000
			f.zadd(f.keys.Prepare, float64((sec-40)*1000+MaxRetries), "expired")
			f.zadd(f.keys.Prepare, float64((sec-3)*1000+MaxRetries), "fresh")
			res := f.cycle(CycleRequest{Max: 10, Timeout: timeout})
			require.Equal(t, []string{"expired"}, members(res.Deliveries), "reclaimed, then popped again")
			assert.Equal(t, expiry(sec-3), res.NextMs)
		})
	})
}

// After promoting the retries that are due, the next look is at the first
// retry still waiting.
func TestCycleNextDueAfterAPromotion(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		now := int64(nowMs())
		f.zadd(f.keys.Retry, float64((now-10)*32+7), "ready")
		f.zadd(f.keys.Retry, float64((now+5_000)*32+7), "later")
		res := f.cycle(CycleRequest{Max: 10})
		require.Equal(t, []string{"ready"}, members(res.Deliveries))
		assert.Equal(t, 7, res.Deliveries[0].RetriesLeft)
		assert.Equal(t, now+5_000, res.NextMs)
	})
}

// A retry falls due in the millisecond its wait ends.
func TestCyclePromotesARetryDueThisMillisecond(t *testing.T) {
	f := newFixture(t, testenv.Mini(t))
	now := time.UnixMilli(1_795_300_000_123)
	f.b.Mini.SetTime(now)
	f.zadd(f.keys.Retry, float64(now.UnixMilli()*32+7), "m")
	res := f.cycle(CycleRequest{Max: 10})
	require.Equal(t, []string{"m"}, members(res.Deliveries))
}
