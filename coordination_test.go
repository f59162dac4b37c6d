package rmq_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Two clients with default options on one namespace share the slots (the
// Redis coordinator), never run two listener calls of one slot at once,
// and say so through Workers and Owners.
func TestDefaultClientsShareSlotsWithoutOverlap(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		var busy [8]atomic.Int32
		var overlaps, calls atomic.Int64
		seen := make(chan string, 1000)
		l := rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
			if busy[m.Slot].Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
			busy[m.Slot].Add(-1)
			calls.Add(1)
			seen <- string(m.Content)
			return nil
		})
		var clients []*rmq.Client
		for range 2 {
			c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
			require.NoError(t, err)
			define(t, c, "t", 8, rmq.Priority)
			require.NoError(t, c.Subscribe("t", l, rmq.WithThreads(2)))
			run(t, c)
			clients = append(clients, c)
		}
		eventually(t, 5*time.Second, "both workers hold half the slots", func() bool {
			ws, err := clients[0].Workers(ctx)
			if err != nil || len(ws) != 2 {
				return false
			}
			for _, w := range ws {
				if w.Coordinator != "redis" || w.OwnedSlots["t"] != 4 || w.Topics["t"] != 2 {
					return false
				}
			}
			return true
		})
		owners, err := clients[1].Owners(ctx, "t")
		require.NoError(t, err)
		require.Len(t, owners, 8)
		for _, o := range owners {
			assert.Equal(t, o.Worker, o.Holder, "slot %d is held by its assignee", o.Slot)
			assert.Positive(t, o.Token)
		}
		var wg sync.WaitGroup
		for i := range 200 {
			wg.Go(func() {
				assert.NoError(t, clients[i%2].Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: fmt.Appendf(nil, "m%d", i), Priority: 20}))
			})
		}
		wg.Wait()
		eventually(t, 10*time.Second, "every message consumed", func() bool { return calls.Load() >= 200 })
		assert.Zero(t, overlaps.Load(), "two listener calls of one slot overlapped")
	})
}

// A client of the local coordinator shares its namespace with nobody.
func TestLocalCoordinatorRefusesABusyNamespace(t *testing.T) {
	t.Parallel() // waits out a neighbour's presence twice, 3.5 s each, mostly idle
	b := testenv.Mini(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	first, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	define(t, first, "t", 4, rmq.Priority)
	require.NoError(t, first.Subscribe("t", newRecorder()))
	run(t, first)
	eventually(t, 5*time.Second, "the first client consumes", func() bool {
		ws, err := first.Workers(ctx)
		return err == nil && len(ws) == 1
	})

	local, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithCoordinator(coordinator.NewLocal()))
	require.NoError(t, err)
	require.NoError(t, local.Subscribe("t", newRecorder()))
	err = local.Start(ctx)
	assert.ErrorIs(t, err, rmq.ErrNamespaceBusy)
	assert.NoError(t, local.Close(ctx))

	// The reverse: a local process refuses a Redis-coordinated neighbour.
	ns2 := testenv.Namespace(t, b)
	alone, err := rmq.New(b.Redis, rmq.WithNamespace(ns2), rmq.WithCoordinator(coordinator.NewLocal()))
	require.NoError(t, err)
	define(t, alone, "t", 4, rmq.Priority)
	require.NoError(t, alone.Subscribe("t", newRecorder()))
	run(t, alone)
	eventually(t, 5*time.Second, "the local client consumes", func() bool {
		ws, err := alone.Workers(ctx)
		return err == nil && len(ws) == 1 && ws[0].Coordinator == "local"
	})
	second, err := rmq.New(b.Redis, rmq.WithNamespace(ns2))
	require.NoError(t, err)
	require.NoError(t, second.Subscribe("t", newRecorder()))
	assert.ErrorIs(t, second.Start(ctx), rmq.ErrNamespaceBusy)
	assert.NoError(t, second.Close(ctx))
}

// TestLocalCoordinatorYieldsToANeighbourFoundLater: a process of the local
// coordinator that finds, at a presence renewal, a neighbour it cannot share
// the namespace with (one cut off from Redis for longer than its presence
// lasted, now back) stops consuming, and Start returns ErrNamespaceBusy.
func TestLocalCoordinatorYieldsToANeighbourFoundLater(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	local, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithCoordinator(coordinator.NewLocal()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = local.Close(ctx) })
	define(t, local, "t", 4, rmq.Priority)
	require.NoError(t, local.Subscribe("t", newRecorder()))
	done := make(chan error, 1)
	go func() { done <- local.Start(ctx) }()
	eventually(t, 5*time.Second, "the local client consumes", func() bool {
		ws, err := local.Workers(ctx)
		return err == nil && len(ws) == 1
	})

	// A Redis-coordinated process reappears (its own renewal re-adds it).
	presence := rdb.NewKeyspace(ns).Presence()
	require.NoError(t, b.Redis.ZAdd(ctx, presence, redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()),
		Member: "redis/elsewhere:1:0x1"}).Err())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, rmq.ErrNamespaceBusy)
		assert.ErrorContains(t, err, "redis/elsewhere:1:0x1")
	case <-time.After(5 * time.Second):
		t.Fatal("the local client kept consuming beside a neighbour")
	}
}
