package reshard_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// presenceSplit is how long TestWorkerStartsWhileTheCoordinatorKeysMove
// keeps the presence keys split, more than Start's five tries of a failing
// Redis take (about a second); membersSplit how long the membership keys
// are split after that.
const (
	presenceSplit = 2500 * time.Millisecond
	membersSplit  = time.Second
)

// TestWorkerStartsWhileTheCoordinatorKeysMove starts a third worker while
// the Redis coordinator's keys are split between two masters: first its
// presence keys (Start's entry for the namespace: every script on them is
// refused, TRYAGAIN) for longer than the five tries Start gives a failing
// Redis; then the presence keys are whole on the new master and the
// membership keys split instead (the worker's join and every heartbeat
// refused), before the rest move and the slot is handed over. Start waits
// both out instead of failing; the worker joins and takes a share of the
// slots once the keys are whole; every message sent is delivered, no two
// listeners hold one slot at once, and nothing is logged at Warn. The
// topic's shared metrics move with the presence keys, so every client's
// metrics flush (one script on them and the namespace's other keys) is
// refused for the whole split: each goes again once the keys are whole, and
// the shared metrics count every send and every delivery once.
func TestWorkerStartsWhileTheCoordinatorKeysMove(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	const ns = "coordjoin"
	l, producer := startLedger(t, cl, ns)
	require.Eventually(t, func() bool {
		ws, err := producer.Workers(ctx)
		return err == nil && len(ws) == 2
	}, 30*time.Second, 50*time.Millisecond, "the two workers did not join")
	stop := l.produce(producer, 1)

	hashSlot, from, to := migrateCoordSlot(t, cl, ns)
	keys := rdb.NewKeyspace(ns)
	split := time.Now()
	require.NoError(t, cl.MigrateKeys(ctx, from, to, keys.PresenceTopics(), keys.Stats("t")))

	third, done := startThird(t, cl, ns, l)
	time.Sleep(presenceSplit)
	// The presence keys whole again on the new master, the membership split.
	require.NoError(t, cl.MigrateKeys(ctx, from, to, keys.Presence(), keys.Members()))
	time.Sleep(membersSplit)
	_, rest, err := cl.FinishMigration(ctx, hashSlot, from, to)
	rest += 4 // the keys moved before
	require.NoError(t, err)
	whole := time.Now()

	var returned bool // the third worker's Start returned
	var startErr error
	require.Eventually(t, func() bool {
		select {
		case startErr = <-done:
			returned = true
			return true
		default:
		}
		return ownersOfAll(ctx, producer, 3)
	}, 30*time.Second, 50*time.Millisecond, "the third worker did not join and take slots")
	require.False(t, returned, "the third worker's Start returned: %v", startErr)
	shared := time.Now()
	time.Sleep(time.Second)
	stop()
	closing, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, third.Close(closing))
	require.NoError(t, <-done)

	l.awaitDelivered(t)
	for _, c := range append(l.workers, producer) {
		require.NoError(t, c.Close(closing))
	}
	m, _, err := newClient(t, cl, ns).NamespaceMetrics(ctx, "t", 1)
	require.NoError(t, err)
	l.mu.Lock()
	defer l.mu.Unlock()
	calls := 0
	for _, n := range l.delivered {
		calls += n
	}
	t.Logf("the coordinator's hash slot %d (%d keys) migrated %s → %s, its keys split for %v (the presence keys "+
		"for %v, then the members' for %v); the third worker held slots %v after the keys were whole; "+
		"sent %d, delivered %d (%d listener calls), send errors %v, overlapping listener calls %d; "+
		"shared metrics: sent %d, delivered %d", hashSlot, rest, from.Addr, to.Addr,
		whole.Sub(split).Round(time.Millisecond), presenceSplit, membersSplit, shared.Sub(whole).Round(time.Millisecond),
		len(l.acked), len(l.delivered), calls, l.sendErrs, l.overlaps.Load(), m.Sent, m.Delivered)
	assert.Greater(t, rest, 6, "the coordinator's other keys moved")
	assert.Equal(t, int64(len(l.acked)), m.Sent, "sends counted in the shared metrics")
	assert.Equal(t, int64(calls), m.Delivered, "deliveries counted in the shared metrics")
	assert.Empty(t, l.sendErrs, "Send failed")
	assert.Zero(t, l.overlaps.Load(), "two listeners held one slot at once")
	assert.Empty(t, l.warned.Logged(), "logged at Warn while the coordinator's keys moved")
}

// startThird starts a third worker of namespace ns on cl, consuming "t"
// into l, and returns it and the channel its Start returns on; it is closed
// when t ends, unless closed before.
func startThird(t *testing.T, cl *testenv.PrivateCluster, ns string, l *ledger) (*rmq.Client, <-chan error) {
	t.Helper()
	third := newClient(t, cl, ns, rmq.WithLogger(slog.New(&l.warned)))
	require.NoError(t, third.Subscribe("t", l.listener(), rmq.WithThreads(2)))
	done := make(chan error, 1)
	go func() { done <- third.Start(context.Background()) }()
	t.Cleanup(func() {
		closing, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, third.Close(closing))
	})
	return third, done
}

// TestWorkerLeavesWhileTheCoordinatorKeysMove closes one of three workers
// while the Redis coordinator's membership keys are split between two
// masters (its leave announced, its slots reassigned, its membership ended:
// every one of those scripts refused, TRYAGAIN) for a second, before the
// rest move and the slot is handed over. The leave waits the split out
// instead of giving up (its slots would then move only when its membership
// expired, a lease TTL later): Close returns nil, the two others hold every
// slot soon after the keys are whole, every message sent is delivered, no
// two listeners hold one slot at once, and nothing is logged at Warn.
func TestWorkerLeavesWhileTheCoordinatorKeysMove(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	const ns = "coordleave"
	l, producer := startLedger(t, cl, ns)
	third, done := startThird(t, cl, ns, l)
	require.Eventually(t, func() bool { return ownersOfAll(ctx, producer, 3) }, 30*time.Second, 50*time.Millisecond,
		"the three workers did not share the slots")
	stop := l.produce(producer, 1)

	hashSlot, from, to := migrateCoordSlot(t, cl, ns)
	split := time.Now()
	require.NoError(t, cl.MigrateKeys(ctx, from, to, rdb.NewKeyspace(ns).Members()))
	closed := make(chan error, 1)
	go func() {
		closing, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		closed <- third.Close(closing)
	}()
	time.Sleep(membersSplit)
	_, rest, err := cl.FinishMigration(ctx, hashSlot, from, to)
	require.NoError(t, err)
	whole := time.Now()
	require.NoError(t, <-closed)
	closedAt := time.Now()
	require.NoError(t, <-done)
	require.Eventually(t, func() bool { return ownersOfAll(ctx, producer, 2) }, 30*time.Second, 10*time.Millisecond,
		"the two other workers did not take every slot")
	handed := time.Now()
	time.Sleep(time.Second)
	stop()

	l.awaitDelivered(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("the coordinator's hash slot %d (%d keys) migrated %s → %s, its membership keys split for %v; the "+
		"third worker's Close returned %v and the other two held every slot %v after the keys were whole; "+
		"sent %d, delivered %d, send errors %v, overlapping listener calls %d", hashSlot, rest+1, from.Addr, to.Addr,
		whole.Sub(split).Round(time.Millisecond), closedAt.Sub(whole).Round(time.Millisecond),
		handed.Sub(whole).Round(time.Millisecond), len(l.acked), len(l.delivered), l.sendErrs, l.overlaps.Load())
	assert.Greater(t, rest, 3, "the coordinator's other keys moved")
	assert.Empty(t, l.sendErrs, "Send failed")
	assert.Zero(t, l.overlaps.Load(), "two listeners held one slot at once")
	assert.Empty(t, l.warned.Logged(), "logged at Warn while the coordinator's keys moved")
}

// ownersOfAll reports whether n workers are members of the namespace and
// their owner records name them for every slot of "t" between them, each
// holding some.
func ownersOfAll(ctx context.Context, c *rmq.Client, n int) bool {
	ws, err := c.Workers(ctx)
	if err != nil || len(ws) != n {
		return false
	}
	owned := 0
	for _, w := range ws {
		if w.OwnedSlots["t"] == 0 {
			return false
		}
		owned += w.OwnedSlots["t"]
	}
	return owned == liveSlots
}
