package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A local process goes on consuming while its namespace's hash slot
// migrates: its presence renewals name no key that may not exist (a
// migrating Cluster master refuses such a script with TRYAGAIN, on either
// side, for the whole migration), so they go on, and with them the local
// leases, which last only while renewals vouch for them.
func TestLocalProcessConsumesWhileTheNamespaceSlotMigrates(t *testing.T) {
	t.Parallel() // mostly waiting
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	const ns = "localmig"
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { cc.Close() })
	c, err := rmq.New(cc, rmq.WithNamespace(ns), rmq.WithCoordinator(coordinator.NewLocal()))
	require.NoError(t, err)
	define(t, c, "t", 4, rmq.Priority)
	rec := newRecorder()
	require.NoError(t, c.Subscribe("t", rec))
	run(t, c)
	require.Eventually(t, func() bool {
		m := c.TopicMetrics()
		return len(m) == 1 && m[0].OwnedSlots == 4
	}, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("before"), Priority: 20}))
	rec.waitCalls(t, 1, 10*time.Second)

	hashSlot := testenv.KeySlot(ns)
	from, to, err := cl.SlotMove(ctx, hashSlot)
	require.NoError(t, err)
	require.NoError(t, cl.StartMigration(ctx, hashSlot, from, to))
	// The namespace's own keys (presence, its topics hash) are all on the
	// old master: a script naming only them runs there.
	src := redis.NewClient(&redis.Options{Addr: from.Addr})
	t.Cleanup(func() { src.Close() })
	presence := ns + ":{" + ns + "}:presence"
	members := ns + ":{" + ns + "}:members"
	n, err := src.Exists(ctx, presence).Result()
	require.NoError(t, err)
	require.EqualValues(t, 1, n, "the presence key is on the old master")
	errTwo := src.Eval(ctx, "return redis.call('ZCARD', KEYS[1])", []string{presence, ns + ":{" + ns + "}:presence-topics"}).Err()
	errThree := src.Eval(ctx, "return redis.call('ZCARD', KEYS[1])", []string{presence, ns + ":{" + ns + "}:presence-topics", members}).Err()
	t.Logf("during the migration: a script on presence+topics: %v; with the (absent) members key too: %v", errTwo, errThree)

	time.Sleep(5 * time.Second) // renewals refused, the vouch lapses
	sent := time.Now()
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("during"), Priority: 20}))
	deadline := time.Now().Add(6 * time.Second)
	for len(rec.snapshot()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := len(rec.snapshot())
	entries, _ := src.ZRangeWithScores(ctx, presence, 0, -1).Result()
	rt, _ := src.Time(ctx).Result()
	for _, e := range entries {
		t.Logf("presence entry %v expires in %v", e.Member, time.UnixMilli(int64(e.Score)).Sub(rt).Round(time.Millisecond))
	}
	t.Logf("message sent 5 s into the migration: delivered %v (waited %v)", got >= 2, time.Since(sent).Round(time.Millisecond))
	assert.GreaterOrEqual(t, got, 2, "the local process stopped consuming while its namespace's hash slot migrates")

	_, _, err = cl.FinishMigration(ctx, hashSlot, from, to)
	require.NoError(t, err)
}
