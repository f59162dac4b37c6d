package rmq_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// statsFlush matches a metrics flush: eval, the script, the number of keys,
// KEYS[1], the client's mark.
func statsFlush(cmd redis.Cmder) bool {
	args := cmd.Args()
	return cmd.Name() == "eval" && len(args) >= 4 && strings.Contains(fmt.Sprint(args[3]), ":stats-mark:")
}

// A metrics flush whose reply is lost went into Redis; the client sends the
// same batch again before its next one, and Redis adds it once: the shared
// metrics count every message once.
func TestMetricsFlushAfterALostReplyCountsOnce(t *testing.T) {
	t.Parallel() // waits on timers and flushes, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		var repeats atomic.Int64 // flushes Redis answered "added before"
		h := &lostReply{match: statsFlush, seen: func(cmd redis.Cmder) {
			if c, ok := cmd.(*redis.Cmd); ok && fmt.Sprint(c.Val()) == "0" {
				repeats.Add(1)
			}
		}}
		b.Redis.AddHook(h)
		warns := &testenv.Warnings{}
		ns := testenv.Namespace(t, b)
		c, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithLogger(slog.New(warns)))
		require.NoError(t, err)
		define(t, c, "p", 4, rmq.Priority)
		h.armed.Store(true)
		send := func(from, to int) {
			for i := from; i < to; i++ {
				require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "m%d", i), Priority: 20}))
			}
		}
		send(0, 10)
		require.Eventually(t, func() bool { return h.lost.Load() == 1 }, 10*time.Second, 10*time.Millisecond,
			"a flush's reply is lost")
		send(10, 15)
		require.NoError(t, c.Close(ctx))
		assert.GreaterOrEqual(t, repeats.Load(), int64(1), "the lost batch went again, and Redis knew it")
		assert.NotEmpty(t, warns.Logged(), "the lost reply is logged")

		reader, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
		require.NoError(t, err)
		defer reader.Close(ctx)
		m, minutes, err := reader.NamespaceMetrics(ctx, "p", 2)
		require.NoError(t, err)
		assert.Equal(t, int64(15), m.Sent, "every send counted once")
		assert.Equal(t, int64(15), minutes[0].Sent+minutes[1].Sent)
	})
}

// While Close waits for the consumers to drain, the periodic metrics flush
// goes on: what the listeners finish during the drain reaches the shared
// metrics while a listener still holds Close back. Before, the periodic
// flush stopped at Close's start, and a dashboard saw the drain only once
// Close returned.
func TestCloseSharesMetricsWhileItDrains(t *testing.T) {
	t.Parallel() // waits on timers and flushes, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
		require.NoError(t, err)
		admin, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
		require.NoError(t, err)
		define(t, c, "t", 4, rmq.Priority)
		var inHand atomic.Int64
		release, releaseLast := make(chan struct{}), make(chan struct{})
		require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
			if inHand.Add(1) == 1 {
				<-releaseLast // holds Close back until the shared metrics are read
				return nil
			}
			<-release
			return nil
		}), rmq.WithThreads(4)))
		started := make(chan error, 1)
		go func() { started <- c.Start(ctx) }()
		for i := range 20 {
			require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", SlotBasis: fmt.Sprint("k", i),
				Content: fmt.Appendf(nil, "m%d", i), Priority: 50}))
		}
		eventually(t, 10*time.Second, "two listeners in hand", func() bool { return inHand.Load() >= 2 })

		closed := make(chan error, 1)
		go func() { closed <- c.Close(ctx) }()
		time.Sleep(100 * time.Millisecond) // Close has begun
		close(release)
		eventually(t, 4*statsFlushEvery, "a listener finished in the drain counted in the shared metrics", func() bool {
			m, _, err := admin.NamespaceMetrics(ctx, "t", 1)
			return err == nil && m.ListenerDuration.Count >= 1
		})
		select {
		case err := <-closed:
			t.Fatalf("Close returned (%v) while a listener held it back", err)
		default:
		}
		close(releaseLast)
		require.NoError(t, <-closed)
		require.NoError(t, <-started)
		m, _, err := admin.NamespaceMetrics(ctx, "t", 1)
		require.NoError(t, err)
		assert.Equal(t, inHand.Load(), int64(m.ListenerDuration.Count), "every listener call counted once")
		require.NoError(t, admin.Close(ctx))
	})
}

// statsFlushEvery is the client's metrics flush period.
const statsFlushEvery = 2 * time.Second
