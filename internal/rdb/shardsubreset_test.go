package rdb

import (
	"context"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestShardSubOutlastsANodeReset: on a Cluster of its own, a master is
// reset (CLUSTER RESET SOFT, as redis-cli --cluster del-node resets a node
// it removes) while a Listen follows sharded channels on every master. The
// reset node answers every SSUBSCRIBE with CLUSTERDOWN Hash slot not served;
// the subscription takes that as its channels dropped and nothing is logged
// at Warn, while the channels of the other masters go on delivering. Before,
// the reply ended that master's subscription with a Warn line, again at
// each try.
func TestShardSubOutlastsANodeReset(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	ctx := context.Background()
	var warned testenv.Warnings
	cl, client, br := privateBroker(t, "reset", WithLogger(slog.New(&warned)))
	ks := br.keys

	masters, err := cl.Masters(ctx)
	require.NoError(t, err)
	reset, other := masters[0], masters[1]
	var channels []string
	var onReset, onOther string
	for i := range 64 {
		ch := ks.Slot("t", i).Wake
		channels = append(channels, ch)
		owns := func(m testenv.ClusterMaster) bool {
			return (testenv.ClusterNode{Slots: m.Slots}).OwnsSlot(testenv.KeySlot(ch))
		}
		if owns(reset) && onReset == "" {
			onReset = ch
		}
		if owns(other) && onOther == "" {
			onOther = ch
		}
	}
	require.NotEmpty(t, onReset)
	require.NotEmpty(t, onOther)
	l := listenShards(t, br, channels)
	l.waitSubscribed(t, channels, 1, 10*time.Second)
	l.await(ctx, t, client, onOther, "before", 5*time.Second)

	node := redis.NewClient(&redis.Options{Addr: reset.Addr})
	defer node.Close()
	require.NoError(t, node.FlushAll(ctx).Err()) // a master with keys refuses a reset
	require.NoError(t, node.Do(ctx, "CLUSTER", "RESET", "SOFT").Err())
	require.Error(t, node.Do(ctx, "SSUBSCRIBE", onReset).Err(), "the reset node refuses its channels")
	time.Sleep(shardDroppedWait + 2*time.Second) // the loop re-dials the reset node at least once
	for i := range 3 {
		l.await(ctx, t, client, onOther, "after-"+strconv.Itoa(i), 5*time.Second)
	}
	assert.Empty(t, warned.Logged(), "logged at Warn while a node was reset")
}
