package rdb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A pop whose store scores come in runs of equal scores is answered in the
// run form (each score once per run); one of distinct scores, in pairs. Both
// decode to the same deliveries.
func TestCycleReplyForm(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		raw := func(req CycleRequest) []any {
			t.Helper()
			req.Timeout, req.Waits = 30e9, noWaits
			out, err := cycleScript.Run(f.ctx, b.Redis, f.keys.cycleKeys(), cycleArgs(&req)...).Slice()
			require.NoError(t, err)
			return out
		}

		for _, m := range []string{"a", "b", "c", "d", "e", "f"} {
			f.zadd(f.keys.Store, 500, m)
		}
		f.zadd(f.keys.Store, 400, "g")
		got := raw(CycleRequest{Priority: true, Max: 10})
		require.Len(t, got, 3+4+7)
		// Equal priorities pop in descending member order.
		assert.Equal(t, []any{int64(2), int64(6), "500", int64(1), "400", "f", "e", "d", "c", "b", "a", "g"}, got[2:])
		res, err := parseCycle(got, true)
		require.NoError(t, err)
		assert.Equal(t, []string{"f", "e", "d", "c", "b", "a", "g"}, members(res.Deliveries))
		assert.Equal(t, int64(500), res.Deliveries[5].Priority)
		assert.Equal(t, int64(400), res.Deliveries[6].Priority)

		f.zadd(f.keys.Store, 900, "x")
		f.zadd(f.keys.Store, 800, "y")
		f.zadd(f.keys.Store, 800, "z")
		got = raw(CycleRequest{Priority: true, Max: 10})
		assert.Equal(t, []any{"x", "900", "z", "800", "y", "800"}, got[2:], "two runs in three: pairs")

		due := int64(nowMs()) - 1000
		for _, m := range []string{"p", "q", "r", "s"} {
			f.zadd(f.keys.Store, float64(due), m)
		}
		got = raw(CycleRequest{Max: 10})
		require.Len(t, got, 3+2+4)
		assert.Equal(t, int64(1), got[2])
		res, err = parseCycle(got, false)
		require.NoError(t, err)
		for _, d := range res.Deliveries {
			assert.Equal(t, due, d.DueMs)
			assert.Equal(t, MaxRetries, d.RetriesLeft)
			s, ok := f.score(f.keys.Prepare, string(d.Member))
			require.True(t, ok)
			assert.Equal(t, float64(d.prepare), s)
		}
	})
}

// A run-form reply that does not add up is an error, not a guess.
func TestParseCycleRejectsBadRuns(t *testing.T) {
	head := []any{int64(1795300000123000), int64(-1)}
	for name, tail := range map[string][]any{
		"no runs":         {int64(0), "a"},
		"runs past end":   {int64(2), int64(1), "500"},
		"run too long":    {int64(1), int64(3), "500", "a", "b"},
		"run too short":   {int64(1), int64(1), "500", "a", "b"},
		"empty run":       {int64(2), int64(0), "500", int64(1), "400", "a"},
		"score not text":  {int64(1), int64(1), int64(500), "a"},
		"bad score":       {int64(1), int64(1), "five", "a"},
		"member not text": {int64(1), int64(1), "500", int64(7)},
	} {
		_, err := parseCycle(append(append([]any{}, head...), tail...), true)
		assert.Error(t, err, name)
	}
	res, err := parseCycle(append(append([]any{}, head...), int64(2), int64(1), "500", int64(2), "3", "a", "b", "c"), true)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c"}, members(res.Deliveries))
	assert.Equal(t, []int{MaxRetries, 3, 3}, []int{res.Deliveries[0].RetriesLeft, res.Deliveries[1].RetriesLeft, res.Deliveries[2].RetriesLeft})
	assert.Equal(t, int64(1795300000+0)*1000+3, res.Deliveries[2].prepare)
}
