package reshard_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// deepBacklog is how many messages the slot holds when it moves.
const deepBacklog = 200_000

// pinger measures how long a node takes to answer a PING, every 2 ms, so
// that a test sees how long a command blocks it.
type pinger struct {
	worst atomic.Int64 // ns
	stop  context.CancelFunc
	done  chan struct{}
}

func startPinger(t *testing.T, addr string) *pinger {
	c := nodeClient(t, addr)
	ctx, stop := context.WithCancel(context.Background())
	p := &pinger{stop: stop, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			start := time.Now()
			if c.Ping(ctx).Err() == nil {
				took := int64(time.Since(start))
				if took > p.worst.Load() {
					p.worst.Store(took)
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { stop(); <-p.done })
	return p
}

// TestDeepSlotMovesWhileConsumed moves the hash slot of a topic slot that
// holds 200,000 messages to another master the way redis-cli --cluster
// reshard does (CLUSTER SETSLOT IMPORTING and MIGRATING, MIGRATE of the
// slot's keys, SETSLOT NODE), while a worker consumes it. Every message is
// delivered, none twice at once, and nothing is logged at Warn; the test
// prints how long the MIGRATE of the slot's keys took (a sorted set of that
// many members moves as one key, and its master answers nothing meanwhile),
// the longest a PING to the old master waited, and the longest pause of
// the deliveries: what a Cluster grown under a deep backlog costs.
func TestDeepSlotMovesWhileConsumed(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	var warned testenv.Warnings
	c := newClient(t, cl, "deep", rmq.WithLogger(slog.New(&warned)))
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: 1, Type: rmq.Priority}))

	filled := time.Now()
	batch := make([]rmq.OutgoingMessage, 0, 1000)
	for i := range deepBacklog {
		batch = append(batch, rmq.PriorityMessage{Topic: "t", Content: []byte("m" + strconv.Itoa(i)), Priority: 17 + int64(i%8)})
		if len(batch) == cap(batch) {
			require.NoError(t, c.Producer().SendBatch(ctx, batch...))
			batch = batch[:0]
		}
	}
	t.Logf("%d messages sent in %v", deepBacklog, time.Since(filled).Round(time.Millisecond))

	var mu sync.Mutex
	seen := make(map[string]bool, deepBacklog)
	var active, overlaps atomic.Int32
	var last time.Time
	var gap time.Duration
	all := make(chan struct{})
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
		if active.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer active.Add(-1)
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if !last.IsZero() {
			gap = max(gap, now.Sub(last))
		}
		last = now
		seen[string(m.Content)] = true
		if len(seen) == deepBacklog {
			close(all)
		}
		return nil
	})))
	start(t, c)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= deepBacklog/20
	}, 30*time.Second, 10*time.Millisecond, "consumption did not start")

	hashSlot := testenv.KeySlot("t:0")
	from, to, err := cl.SlotMove(ctx, hashSlot)
	require.NoError(t, err)
	p := startPinger(t, from.Addr)
	mu.Lock()
	before := len(seen)
	mu.Unlock()
	moveStart := time.Now()
	require.NoError(t, cl.StartMigration(ctx, hashSlot, from, to))
	migrate, keys, err := cl.FinishMigration(ctx, hashSlot, from, to)
	require.NoError(t, err)
	moved := time.Since(moveStart)
	time.Sleep(200 * time.Millisecond)
	p.stop()
	<-p.done

	select {
	case <-all:
	case <-time.After(2 * time.Minute):
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		t.Fatalf("%d of %d messages delivered", n, deepBacklog)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("slot moved %s → %s with about %d messages left in it (%d delivered before) in %v: MIGRATE of its %d keys "+
		"took %v, the old master's longest PING %v; the longest pause between two deliveries %v",
		from.Addr, to.Addr, deepBacklog-before, before, moved.Round(time.Millisecond), keys,
		migrate.Round(time.Millisecond), time.Duration(p.worst.Load()).Round(time.Millisecond),
		gap.Round(time.Millisecond))
	assert.Zero(t, overlaps.Load(), "two listeners held the slot at once")
	assert.Empty(t, warned.Logged(), "logged at Warn while the slot moved")
}
