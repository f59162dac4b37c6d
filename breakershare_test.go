package rmq_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A process shares its open breaker in Redis within a flush, other clients
// of the namespace read it (OpenBreakers), stale entries are ignored, and a
// process takes its entry away when its breaker closes or it stops.
func TestOpenBreakersAreSharedAcrossProcesses(t *testing.T) {
	t.Parallel() // waits on timers and flushes, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		worker, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithRetryBackoff(rmq.NoBackoff))
		require.NoError(t, err)
		define(t, worker, "p", 2, rmq.Priority)
		define(t, worker, "q", 2, rmq.Priority)
		var healthy atomic.Bool
		require.NoError(t, worker.Subscribe("p", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
			if healthy.Load() {
				return nil
			}
			return errors.New("down")
		}), rmq.WithBreaker(rmq.Breaker{FailureRatio: 0.5, MinCalls: 4, OpenFor: 2 * time.Second})))
		require.NoError(t, worker.Subscribe("q", rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return nil })))
		done := make(chan error, 1)
		go func() { done <- worker.Start(ctx) }()
		admin := newClient(t, b, rmq.WithNamespace(ns))

		none, err := admin.OpenBreakers(ctx, "p")
		require.NoError(t, err)
		assert.Empty(t, none)
		var msgs []rmq.OutgoingMessage
		for i := range 10 {
			msgs = append(msgs, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "m%d", i), Priority: 20},
				rmq.PriorityMessage{Topic: "q", Content: fmt.Appendf(nil, "m%d", i), Priority: 20})
		}
		require.NoError(t, admin.Producer().SendBatch(ctx, msgs...))
		eventually(t, 10*time.Second, "the breaker opens", func() bool { return topicMetrics(worker, "p").Breaker == rmq.BreakerOpen })
		opened := time.Now()
		var open []rmq.ProcessBreaker
		eventually(t, 5*time.Second, "another client sees it", func() bool {
			open, err = admin.OpenBreakers(ctx, "p")
			require.NoError(t, err)
			return len(open) == 1
		})
		assert.LessOrEqual(t, time.Since(opened), 3*time.Second, "shared with the next flush (every 2 s)")
		host, _ := os.Hostname()
		assert.Contains(t, []string{rmq.BreakerOpen, rmq.BreakerHalfOpen}, open[0].State, "open, or probing by now")
		assert.Contains(t, open[0].Process, "redis/"+host+":"+strconv.Itoa(os.Getpid())+":", "the process's presence entry")
		assert.WithinDuration(t, time.Now(), open[0].At, 3*time.Second)
		q, err := admin.OpenBreakers(ctx, "q")
		require.NoError(t, err)
		assert.Empty(t, q, "a closed breaker is not shared")
		_, err = admin.OpenBreakers(ctx, "nope")
		assert.ErrorIs(t, err, rmq.ErrUnknownTopic)

		// A process that died with its breaker open, and a record no one can read, are left out.
		key := rdb.NewKeyspace(ns).BreakerStates("p")
		stale := strconv.FormatInt(time.Now().Add(-11*time.Second).UnixMilli(), 10)
		require.NoError(t, b.Redis.HSet(ctx, key, "redis/dead:1:0x1", "open|"+stale, "redis/odd:2:0x2", "open").Err())
		open, err = admin.OpenBreakers(ctx, "p")
		require.NoError(t, err)
		require.Len(t, open, 1)
		assert.False(t, strings.Contains(open[0].Process, "dead"))

		healthy.Store(true)
		eventually(t, 10*time.Second, "the breaker closes and its entry goes", func() bool {
			open, err = admin.OpenBreakers(ctx, "p")
			require.NoError(t, err)
			return len(open) == 0 && topicMetrics(worker, "p").Breaker == rmq.BreakerClosed
		})
		require.NoError(t, b.Redis.HDel(ctx, key, "redis/dead:1:0x1", "redis/odd:2:0x2").Err())

		// A process that stops with its breaker open takes its entry away.
		healthy.Store(false)
		for i := range 10 {
			require.NoError(t, admin.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "again%d", i), Priority: 20}))
		}
		eventually(t, 10*time.Second, "it opens again and is shared", func() bool {
			open, err = admin.OpenBreakers(ctx, "p")
			require.NoError(t, err)
			return len(open) == 1
		})
		require.NoError(t, worker.Close(ctx))
		require.NoError(t, <-done)
		n, err := b.Redis.HLen(ctx, key).Result()
		require.NoError(t, err)
		assert.Zero(t, n, "a process that stopped took its entry away")
	})
}
