package rdb

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// followWithAStaleMap: a consumer whose slot map never changes (its
// ClusterSlots returns the layout from before the move) still follows a
// channel whose hash slot is given to another master. The old master drops
// the channel, answers the SSUBSCRIBE asked again with MOVED, and the
// channel is subscribed on the master that MOVED named; what is published
// there arrives.
func followWithAStaleMap(ctx context.Context, t *testing.T, cl *testenv.PrivateCluster, client *redis.ClusterClient, ch string) {
	frozen, err := client.ClusterSlots(ctx).Result()
	require.NoError(t, err)
	stale := redis.NewClusterClient(&redis.ClusterOptions{
		ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) { return frozen, nil },
	})
	t.Cleanup(func() { stale.Close() })
	br := New(stale, NewKeyspace("shards"), WithLogger(discard)).(*redisBroker)
	t.Cleanup(func() { br.Close(context.Background()) })
	l := listenShards(t, br, []string{ch}) // stops before the broker closes
	l.waitSubscribed(t, []string{ch}, 1, 10*time.Second)

	hashSlot := testenv.KeySlot(ch)
	from, to, err := cl.SlotMove(ctx, hashSlot)
	require.NoError(t, err)
	require.NoError(t, cl.GiveSlot(ctx, hashSlot, to))
	l.waitSubscribed(t, []string{ch}, 2, 10*time.Second)
	l.await(ctx, t, client, ch, "after-move", 10*time.Second)
	node, err := stale.MasterForKey(ctx, ch)
	require.NoError(t, err)
	// go-redis turns a loopback host of a map that a ClusterSlots function
	// gave into the empty host: compare ports
	_, fromPort, _ := net.SplitHostPort(from.Addr)
	_, mapPort, _ := net.SplitHostPort(node.Options().Addr)
	require.Equal(t, fromPort, mapPort, "the consumer's slot map still names the old master")
	everyNodeSays(ctx, t, cl, hashSlot, to.Addr)
}

// everyNodeSays waits until every node of cl, replicas too, names addr as
// the master of hashSlot: a replica promoted before it learnt of a move
// would claim the slot too.
func everyNodeSays(ctx context.Context, t *testing.T, cl *testenv.PrivateCluster, hashSlot int, addr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, node := range cl.Addrs() {
			if servedBy(ctx, node, hashSlot) != addr {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "the nodes did not all learn of the move")
}
