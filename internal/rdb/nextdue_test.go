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
