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
		// The same outcomes again, twice, as after errors.
		for range 2 {
			f.cycle(CycleRequest{Priority: priority, Max: 1, Outcomes: outs})
			_, inStore := f.score(f.keys.Store, "m")
			_, inPrepare := f.score(f.keys.Prepare, "m")
			require.True(t, inStore || inPrepare, "the new copy is gone")
		}
		// A call without them delivers it, as sent the second time.
		res := f.cycle(CycleRequest{Priority: priority, Max: 5})
		var got *Delivery
		for i := range res.Deliveries {
			if string(res.Deliveries[i].Member) == "m" {
				got = &res.Deliveries[i]
			}
		}
		require.NotNil(t, got, "the new copy is not delivered")
		if priority {
			assert.Equal(t, int64(mAgain), got.Priority)
		} else {
			assert.Equal(t, int64(mAgain), got.DueMs)
		}
		return
	}
}
