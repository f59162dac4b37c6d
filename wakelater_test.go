package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A parked (empty) slot woken for a message due far ahead is no longer
// parked, so the idle sweep no longer looks at it: it looks again within the
// sweep interval, not only at that due time. A message that lands in the
// slot meanwhile without its wake-up (a producer that died between its write
// and its publication, the case the sweep exists for) is found then. (It
// waited until the far due time.)
func TestWakeForALaterMessageKeepsTheSafetyNet(t *testing.T) {
	// Without the wake-up for "later" the parked slot's sweep finds the
	// message within an idle poll or so.
	t.Run("control-no-later-message", func(t *testing.T) { lostWakeBeside(t, false) })
	t.Run("after-wake-for-later-message", func(t *testing.T) { lostWakeBeside(t, true) })
}

func lostWakeBeside(t *testing.T, later bool) {
	b := testenv.Single(t)
	ctx := context.Background()
	c := newClient(t, b, rmq.WithIdlePoll(100*time.Millisecond), rmq.WithLogger(debugLogger()))
	define(t, c, "lw", 1, rmq.FixedTime)
	r := newRecorder()
	require.NoError(t, c.Subscribe("lw", r))
	run(t, c)
	awaitHeld(t, c, "lw", 1, 500*time.Millisecond) // the slot looked once and parked

	if later {
		// A message due in an hour: its wake-up sets the parked slot's next look.
		require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "lw", Content: []byte("later"),
			FixedTime: time.Now().Add(time.Hour)}))
	}
	time.Sleep(300 * time.Millisecond) // the wake-up arrives
	// A message due now whose producer died before publishing its wake-up.
	store := c.Namespace() + ":{lw:0}:store"
	require.NoError(t, b.Redis.ZAdd(ctx, store, redis.Z{Score: float64(time.Now().UnixMilli()), Member: "lost-wake"}).Err())
	start := time.Now()
	deadline := start.Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range r.contents() {
			if s == "lost-wake" {
				t.Logf("lost-wake delivered %v after it was stored", time.Since(start).Round(time.Millisecond))
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("a due message whose wake-up was lost waited more than 3 s (idle poll 100 ms): deliveries %v, store %d",
		r.contents(), stats(t, c, "lw").Store)
}
