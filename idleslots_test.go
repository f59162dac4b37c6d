package rmq_test

import (
	"context"
	"strings"
	"sync/atomic"
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
// thread's idle sweep, within about an idle poll on a single node (the
// default sweep) and within about the sweep set on a Cluster (whose default
// is 20 polls: TestClusterSweepsEveryTwentiethPoll).
func TestIdleSweepFindsAMessageWithoutWakeUp(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		opts := []rmq.Option{rmq.WithIdlePoll(300 * time.Millisecond)}
		if b.Name == "cluster" {
			opts = append(opts, rmq.WithIdleSweep(300*time.Millisecond))
		}
		c := newClient(t, b, opts...)
		define(t, c, "quiet", 8, rmq.Priority)
		rec := newRecorder()
		require.NoError(t, c.Subscribe("quiet", rec, rmq.WithThreads(2)))
		run(t, c)
		awaitHeld(t, c, "quiet", 8, 100*time.Millisecond) // every slot has looked once and parked

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

// TestClusterSweepsEveryTwentiethPoll: on a Cluster, where the idle sweep
// costs an EXISTS per parked slot, a thread sweeps every 20th idle poll by
// default, and that sweep still finds a message stored without a wake-up.
func TestClusterSweepsEveryTwentiethPoll(t *testing.T) {
	t.Parallel() // mostly idle; counts its own client's commands only
	b := testenv.Cluster(t)
	ctx := context.Background()
	ex := &existsCounter{}
	testenv.HookNodes(t, b.Redis.(*redis.ClusterClient), func(*redis.Client) redis.Hook { return ex })
	c := newClient(t, b, rmq.WithIdlePoll(100*time.Millisecond))
	const slots = 256
	define(t, c, "sparse", slots, rmq.FixedTime)
	rec := newRecorder()
	require.NoError(t, c.Subscribe("sparse", rec, rmq.WithThreads(2)))
	run(t, c)
	awaitHeld(t, c, "sparse", slots, 500*time.Millisecond) // every slot has looked once and parked

	before := ex.n.Load()
	window := 4 * time.Second
	time.Sleep(window)
	perSlot := float64(ex.n.Load()-before) / window.Seconds() / slots
	t.Logf("%.2f EXISTS per parked slot per second (idle poll 100 ms)", perSlot)
	// A sweep every poll (100 ms minus jitter) asks about 11 times per slot
	// per second (measured: 11.1); every 20th (2 s minus jitter) about 0.55.
	// Each of the two threads still sweeps: at least once in the window.
	assert.Less(t, perSlot, 1.5)
	assert.GreaterOrEqual(t, perSlot, 1/window.Seconds())

	keys := rdb.NewKeyspace(c.Namespace()).Slots("sparse", slots)
	sent := time.Now()
	require.NoError(t, b.Redis.ZAdd(ctx, keys[77].Store, redis.Z{Score: 100, Member: "unannounced"}).Err())
	select {
	case <-rec.seen:
	case <-time.After(5 * time.Second):
		t.Fatal("a message stored without a wake-up was not found by the idle sweep")
	}
	t.Logf("found after %v", time.Since(sent))
	assert.Equal(t, "unannounced", rec.snapshot()[0].content)
}

// existsCounter counts the EXISTS commands a client sends.
type existsCounter struct{ n atomic.Int64 }

func (e *existsCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (e *existsCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		e.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}
func (e *existsCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		e.count(cmds)
		return next(ctx, cmds)
	}
}

func (e *existsCounter) count(cmds []redis.Cmder) {
	for _, c := range cmds {
		if c.Name() == "exists" {
			e.n.Add(1)
		}
	}
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
