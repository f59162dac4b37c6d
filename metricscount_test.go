package rmq_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// isCycleCall reports whether cmd runs the cycle script.
func isCycleCall(cmd redis.Cmder) bool {
	args := cmd.Args()
	return cmd.Name() == "evalsha" && len(args) > 1 && args[1] == cycleSHA
}

// slowPopHook delays the reply of every cycle call made while slow is set
// (the call itself reaches Redis at once).
type slowPopHook struct {
	slow  *atomic.Bool
	delay time.Duration
}

func (h slowPopHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h slowPopHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		slow := h.slow.Load() && isCycleCall(cmd)
		err := next(ctx, cmd)
		if slow {
			time.Sleep(h.delay)
		}
		return err
	}
}
func (h slowPopHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		slow := false
		for _, c := range cmds {
			slow = slow || (h.slow.Load() && isCycleCall(c))
		}
		err := next(ctx, cmds)
		if slow {
			time.Sleep(h.delay)
		}
		return err
	}
}

// On a Cluster, a pop that outlasts the soft wait is left running; when the
// slot is let go meanwhile (here by Close), awaitPop waits for it and hands
// what it took back unstarted, which Restored counts (it did not).
func TestRestoredCountsAPopLeftRunningAtRelease(t *testing.T) {
	b := testenv.Cluster(t)
	var slow atomic.Bool
	testenv.HookNodes(t, b.Redis.(*redis.ClusterClient), func(*redis.Client) redis.Hook {
		return slowPopHook{slow: &slow, delay: 400 * time.Millisecond}
	})
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "rs", 1, rmq.Priority)
	rec := newRecorder()
	require.NoError(t, c.Subscribe("rs", rec, rmq.WithThreads(1)))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	awaitHeld(t, c, "rs", 1, 300*time.Millisecond)

	const n = 5
	slow.Store(true)
	var msgs []rmq.OutgoingMessage
	for i := range n {
		msgs = append(msgs, rmq.PriorityMessage{Topic: "rs", Content: fmt.Appendf(nil, "m%d", i), Priority: 20})
	}
	require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
	// The pop has taken them (they are in prepare) and its reply is delayed.
	// (The first pop of a subscription takes one message.)
	var took int64
	eventually(t, 5*time.Second, "the pop took messages", func() bool { took = stats(t, c, "rs").Prepare; return took > 0 })
	slow.Store(false)
	closeCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	require.NoError(t, c.Close(closeCtx))
	require.NoError(t, <-done)
	if calls := len(rec.snapshot()); calls != 0 {
		t.Fatalf("scenario not reached: the listener was called %d times before Close", calls)
	}
	st := stats(t, c, "rs")
	require.Equal(t, int64(n), st.Store, "handed back unstarted: back in store")
	require.Zero(t, st.Prepare)

	m := topicMetrics(c, "rs")
	assert.Equal(t, took, m.Restored, "TopicMetrics.Restored: messages popped and handed back unstarted")
	assert.Equal(t, took, c.Metrics().Restored, "Metrics.Restored")
}

// failCycleHook fails every cycle call made while fail is set, without
// sending it, and counts them.
type failCycleHook struct {
	fail   *atomic.Bool
	failed *atomic.Int64
}

var errInjectedCycle = errors.New("injected failure")

func (h failCycleHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h failCycleHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.fail.Load() && isCycleCall(cmd) {
			h.failed.Add(1)
			cmd.SetErr(errInjectedCycle)
			return errInjectedCycle
		}
		return next(ctx, cmd)
	}
}
func (h failCycleHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if h.fail.Load() && isCycleCall(c) {
				h.failed.Add(1)
				for _, c := range cmds {
					c.SetErr(errInjectedCycle)
				}
				return errInjectedCycle
			}
		}
		return next(ctx, cmds)
	}
}

// Metrics.RedisErrors counts "failed Redis calls of consumers (each followed
// by a backoff)": so it does the failed calls of a settle when a slot is let
// go (here at Close), each retried after a backoff (none was counted).
func TestRedisErrorsCountFailedSettles(t *testing.T) {
	b := testenv.Single(t)
	var fail atomic.Bool
	var failed atomic.Int64
	rc := redis.NewClient(b.Redis.(*redis.Client).Options())
	t.Cleanup(func() { rc.Close() })
	rc.AddHook(failCycleHook{fail: &fail, failed: &failed})
	b.Redis = rc
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "settle", 1, rmq.Priority)
	release := make(chan struct{})
	rec := newRecorder()
	rec.fail = func(*rmq.Message) error { <-release; return nil }
	require.NoError(t, c.Subscribe("settle", rec))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "settle", Content: []byte("x"), Priority: 20}))
	rec.waitCalls(t, 1, 10*time.Second)
	before := c.Metrics().RedisErrors

	closed := make(chan error, 1)
	go func() { closed <- c.Close(ctx) }()
	time.Sleep(300 * time.Millisecond) // the slot's lease is being revoked
	fail.Store(true)
	close(release)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Close hung")
	}
	require.NoError(t, <-done)
	fail.Store(false)
	require.Positive(t, failed.Load(), "scenario not reached: no cycle call failed")
	require.Equal(t, int64(1), stats(t, c, "settle").Prepare, "the commit was not settled")
	t.Logf("%d cycle calls failed", failed.Load())
	assert.Equal(t, before+failed.Load(), c.Metrics().RedisErrors,
		"each failed settle call of the consumer (followed by a backoff) counted")
}
