package rmq_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestIdleSweepFindsAMessageWithoutWakeUp: a message stored without a
// wake-up (as after a lost publication) in a parked slot is found by the
// thread's idle sweep, within about an idle poll.
func TestIdleSweepFindsAMessageWithoutWakeUp(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithIdlePoll(300*time.Millisecond))
		define(t, c, "quiet", 8, rmq.Priority)
		rec := newRecorder()
		require.NoError(t, c.Subscribe("quiet", rec, rmq.WithThreads(2)))
		run(t, c)
		require.Eventually(t, func() bool {
			o, err := c.Owners(ctx, "quiet")
			return err == nil && len(o) == 8 && o[7].Holder != ""
		}, 10*time.Second, 10*time.Millisecond)
		time.Sleep(100 * time.Millisecond) // every slot has looked once and parked

		keys := rdb.NewKeyspace(c.Namespace()).Slots("quiet", 8)
		sent := time.Now()
		require.NoError(t, b.Redis.ZAdd(ctx, keys[5].Store, redis.Z{Score: 100, Member: "unannounced"}).Err())
		select {
		case <-rec.seen:
		case <-time.After(5 * time.Second):
			t.Fatal("a message stored without a wake-up was not found by the idle sweep")
		}
		took := time.Since(sent)
		t.Logf("found after %v", took)
		assert.Equal(t, "unannounced", rec.snapshot()[0].content)
		assert.Less(t, took, 2*time.Second)
	})
}

// TestIdleSlotsCostFewCommands: a thread's parked slots cost Redis a few
// commands per idle poll, not a script call per slot.
func TestIdleSlotsCostFewCommands(t *testing.T) {
	b := testenv.Single(t)
	c := newClient(t, b, rmq.WithIdlePoll(200*time.Millisecond))
	define(t, c, "many", 1024, rmq.FixedTime)
	require.NoError(t, c.Subscribe("many", newRecorder(), rmq.WithThreads(4)))
	run(t, c)
	require.Eventually(t, func() bool {
		for _, m := range c.TopicMetrics() {
			if m.Topic == "many" {
				return m.OwnedSlots == 1024
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	time.Sleep(500 * time.Millisecond)

	admin := b.Redis.(*redis.Client)
	before := commandCalls(t, admin)
	window := 2 * time.Second
	time.Sleep(window)
	calls := commandCalls(t, admin) - before
	perSlot := float64(calls) / window.Seconds() / 1024
	t.Logf("%d commands in %v for 1,024 idle slots: %.4f per slot per second (idle poll 200 ms)", calls, window, perSlot)
	// At a 200 ms poll the old per-slot poll cost 2 commands per slot per
	// 0.2 s, i.e. 10 per slot per second.
	assert.Less(t, perSlot, 0.2)
}

// commandCalls sums the calls of every command of INFO commandstats (the
// shared server also serves other tests' leftovers: a window's difference
// is what counts).
func commandCalls(t *testing.T, admin *redis.Client) int64 {
	t.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	var total int64
	for _, line := range strings.Split(info, "\n") {
		if _, rest, ok := strings.Cut(line, ":calls="); ok {
			n, _, _ := strings.Cut(rest, ",")
			var v int64
			for _, ch := range n {
				v = v*10 + int64(ch-'0')
			}
			total += v
		}
	}
	return total
}
