package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Reads whose staleness would change what RMQ does go to the masters even
// on a client that sends its reads to replicas, which lag by the
// replication delay and, cut off from their master, for as long as that
// lasts: a topic's definition (one just defined by another process must not
// read as unknown), the flow controls (a pause must hold), the topics each
// process consumes (DeleteTopic's refusal). While such a client makes each
// of those reads, the replicas' HGET, HGETALL and ZRANGE calls do not grow;
// a plain HGET of the same client reaches them.
func TestClusterClientReadsWhatDecidesOnMasters(t *testing.T) {
	cluster := testenv.Cluster(t)
	addrs := cluster.Redis.(*redis.ClusterClient).Options().Addrs
	ctx := context.Background()
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, RouteRandomly: true})
	t.Cleanup(func() { r.Close() })
	require.NoError(t, r.Ping(ctx).Err())
	ns := testenv.Namespace(t, cluster)
	owner, err := rmq.New(cluster.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = owner.Close(context.Background()) })
	define(t, owner, "busy", 4, rmq.Priority)
	define(t, owner, "paused", 4, rmq.FixedTime)
	require.NoError(t, owner.PauseTopic(ctx, "paused"))
	require.NoError(t, owner.Subscribe("busy", newRecorder()))
	run(t, owner)
	require.Eventually(t, func() bool {
		ws, err := owner.Workers(ctx)
		return err == nil && len(ws) == 1 && ws[0].Topics["busy"] > 0
	}, 10*time.Second, 20*time.Millisecond, "the owner's presence")

	deciding := replicaCalls(t, r, "hget", "hgetall", "zrange")
	for range 20 {
		c, err := rmq.New(r, rmq.WithNamespace(ns)) // a new process: no definition cached
		require.NoError(t, err)
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "busy", Content: []byte("m"), Priority: 100}))
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "paused", SlotAmount: 4, Type: rmq.FixedTime}),
			"defined before: read back")
		flows, err := c.FlowControls(ctx)
		require.NoError(t, err)
		require.True(t, flows["paused"].Paused)
		topics, err := c.Topics(ctx)
		require.NoError(t, err)
		require.Len(t, topics, 2)
		require.ErrorIs(t, c.DeleteTopic(ctx, "busy"), rmq.ErrTopicInUse)
		require.NoError(t, c.Close(ctx))
	}
	assert.Equal(t, deciding, replicaCalls(t, r, "hget", "hgetall", "zrange"), "the replicas served HGET, HGETALL or ZRANGE")
	for range 50 { // the same read, plain: this client sends it to replicas
		require.ErrorIs(t, r.HGet(ctx, "{"+ns+"}:probe", "f").Err(), redis.Nil)
	}
	assert.Greater(t, replicaCalls(t, r, "hget", "hgetall", "zrange"), deciding, "the client read from replicas")
}
