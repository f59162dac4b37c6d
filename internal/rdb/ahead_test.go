package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

func TestCycleAheadPopsMessagesDueSoonCountingFromTheirDueSecond(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		now := nowMs()
		f.zadd(f.keys.Store, now-10, "due")
		f.zadd(f.keys.Store, now+1_500, "soon")
		f.zadd(f.keys.Store, now+4_000, "later")
		f.zadd(f.keys.Store, 2, "retried")
		res := f.cycle(CycleRequest{Max: 10, Ahead: 2 * time.Second})
		require.Equal(t, []string{"retried", "due", "soon"}, members(res.Deliveries), "due order, up to now + ahead")
		assert.InDelta(t, now+4_000, float64(res.NextMs), 1, "next is the first store entry beyond the window")
		assert.Equal(t, int64(now+1_500), res.Deliveries[2].DueMs)
		// Popped ahead: the consume timeout counts from the due second; the
		// others from the pop second, as without ahead.
		for _, d := range res.Deliveries {
			s, ok := f.score(f.keys.Prepare, string(d.Member))
			require.True(t, ok)
			second := res.NowMs / 1000
			if d.DueMs > res.NowMs {
				second = d.DueMs / 1000
			}
			assert.Equal(t, float64(second*1000+int64(d.RetriesLeft)), s, "%s", d.Member)
			assert.Equal(t, float64(d.prepare), s, "%s: the delivery settles what was written", d.Member)
		}
		// Settling works on a message popped ahead like on any other.
		res = f.cycle(CycleRequest{Max: 0, Outcomes: []Outcome{res.Deliveries[2].Settle(Restore)}})
		assert.False(t, res.Refused)
		s, ok := f.score(f.keys.Store, "soon")
		require.True(t, ok, "restored")
		assert.Equal(t, float64(now+1_500), s, "with its own due time")
		_, ok = f.score(f.keys.Prepare, "soon")
		assert.False(t, ok)
	})
}

func TestCycleAheadIsIgnoredByPriorityPops(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 100, "a")
		f.zadd(f.keys.Store, 50, "b")
		res := f.cycle(CycleRequest{Priority: true, Max: 10, Ahead: time.Second})
		assert.Equal(t, []string{"a", "b"}, members(res.Deliveries))
		for _, d := range res.Deliveries {
			s, _ := f.score(f.keys.Prepare, string(d.Member))
			assert.Equal(t, float64(res.NowMs/1000*1000+MaxRetries), s)
		}
	})
}
