package rdb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A cycle call can run in Redis while its caller sees an error (a reply lost
// with its connection). The caller, or go-redis's own retry, then sends the
// same outcomes again. When the lost call committed a content and, in the
// same second, could pop a newer copy of it (sent again while the first was
// in flight) with the same prepare score, the repeated commit would remove
// that copy, whose delivery never reached the caller: it must be left in
// store for a later call instead.
func TestCycleRepeatedCommitSparesTheCopyTheLostCallPopped(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		for _, order := range []string{"priority", "due time"} {
			for _, form := range []string{"one pop", "mixed outcomes"} {
				t.Run(order+"/"+form, func(t *testing.T) {
					repeatCommitAfterLostCall(t, b, order == "priority", form == "mixed outcomes")
				})
			}
		}
	})
}

func repeatCommitAfterLostCall(t *testing.T, b testenv.Backend, priority, mixed bool) {
	f := newFixture(t, b)
	// Priority: m ranks first by its priority; due time: by its due time.
	mFirst, nNext, mAgain := 100.0, 90.0, 200.0
	for attempt := 0; ; attempt++ {
		require.NoError(t, b.Redis.Del(f.ctx, f.keys.Store, f.keys.Prepare, f.keys.Retry, f.keys.Dead).Err())
		if !priority {
			now := nowMs()
			mFirst, nNext, mAgain = now-300, now-200, now-100
		}
		f.zadd(f.keys.Store, mFirst, "m")
		f.zadd(f.keys.Store, nNext, "n")
		first := f.cycle(CycleRequest{Priority: priority, Max: 5})
		require.ElementsMatch(t, []string{"m", "n"}, members(first.Deliveries))
		f.zadd(f.keys.Store, mAgain, "m") // sent again while in flight
		outs := settle(first, Commit)
		if mixed {
			for i, d := range first.Deliveries {
				if string(d.Member) == "n" {
					outs[i] = d.Settle(Rollback)
				}
			}
		}
		lost := f.cycle(CycleRequest{Priority: priority, Max: 1, Outcomes: outs})
		if lost.NowMs/1000 != first.NowMs/1000 && attempt < 10 {
			continue // the case needs both calls in one second
		}
		assert.NotContains(t, members(lost.Deliveries), "m", "popped with the score its commit names")
		assert.Equal(t, lost.NowMs, lost.NextMs, "the slot is due again at once")
		// The same outcomes again, twice, as after errors (these replies
		// come), then a call without them.
		var got []Delivery
		for range 2 {
			res := f.cycle(CycleRequest{Priority: priority, Max: 1, Outcomes: outs})
			got = append(got, res.Deliveries...)
			_, inStore := f.score(f.keys.Store, "m")
			_, inPrepare := f.score(f.keys.Prepare, "m")
			require.True(t, inStore || inPrepare, "the new copy is gone")
		}
		got = append(got, f.cycle(CycleRequest{Priority: priority, Max: 5}).Deliveries...)
		var again []Delivery
		for _, d := range got {
			if string(d.Member) == "m" {
				again = append(again, d)
			}
		}
		require.Len(t, again, 1, "the new copy is delivered once")
		if priority {
			assert.Equal(t, int64(mAgain), again[0].Priority)
		} else {
			assert.Equal(t, int64(mAgain), again[0].DueMs)
		}
		return
	}
}

// The pop stops before such a copy: the entries after it wait too, so the
// next call pops in the usual order, the copy first.
func TestCycleStopsBeforeACopyOfAContentItCommits(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		for attempt := 0; ; attempt++ {
			require.NoError(t, b.Redis.Del(f.ctx, f.keys.Store, f.keys.Prepare).Err())
			f.zadd(f.keys.Store, 300, "a")
			f.zadd(f.keys.Store, 100, "m")
			first := f.cycle(CycleRequest{Priority: true, Max: 2})
			require.Equal(t, []string{"a", "m"}, members(first.Deliveries))
			f.zadd(f.keys.Store, 250, "x")
			f.zadd(f.keys.Store, 200, "m") // sent again while in flight
			f.zadd(f.keys.Store, 150, "y")
			res := f.cycle(CycleRequest{Priority: true, Max: 5, Outcomes: settle(first, Commit)})
			if res.NowMs/1000 != first.NowMs/1000 && attempt < 10 {
				continue // the case needs both calls in one second
			}
			assert.Equal(t, []string{"x"}, members(res.Deliveries), "stopped before m")
			assert.Equal(t, res.NowMs, res.NextMs, "the slot is due again at once")
			res = f.cycle(CycleRequest{Priority: true, Max: 5, Outcomes: settle(res, Commit)})
			assert.Equal(t, []string{"m", "y"}, members(res.Deliveries))
			return
		}
	})
}
