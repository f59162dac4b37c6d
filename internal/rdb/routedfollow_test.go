package rdb

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A routed read that a master redirects goes again to the master named, not
// through a Cluster client that reads from replicas: while a hash slot
// migrates, the old master's replica no longer holds a key moved already
// (ASK), and after a move the client's slot map may still name the old
// master (MOVED). Without the follow, about every other run read the ASKed
// key as missing from the replica.
func TestRoutedPipelineFollowsARedirectionToTheMaster(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	ctx := context.Background()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, cl.WaitReplicasListed(waitCtx))
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), RouteRandomly: true})
	t.Cleanup(func() { client.Close() })

	asked, moved := "{asked}k", "{moved}k"
	askFrom, askTo, err := cl.SlotMove(ctx, testenv.KeySlot(asked))
	require.NoError(t, err)
	moveFrom, moveTo, err := cl.SlotMove(ctx, testenv.KeySlot(moved))
	require.NoError(t, err)
	for _, k := range []string{asked, moved} {
		require.NoError(t, client.Set(ctx, k, k+" value", 0).Err())
	}
	require.NoError(t, client.Ping(ctx).Err()) // the slot map is loaded
	var replicas atomic.Int64
	require.NoError(t, client.ForEachSlave(ctx, func(context.Context, *redis.Client) error {
		replicas.Add(1)
		return nil
	}))

	require.NoError(t, cl.StartMigration(ctx, testenv.KeySlot(asked), askFrom, askTo))
	require.NoError(t, cl.MigrateKeys(ctx, askFrom, askTo, asked))
	require.NoError(t, cl.StartMigration(ctx, testenv.KeySlot(moved), moveFrom, moveTo))
	_, _, err = cl.FinishMigration(ctx, testenv.KeySlot(moved), moveFrom, moveTo)
	require.NoError(t, err)
	for _, from := range []testenv.ClusterMaster{askFrom, moveFrom} {
		waitReplicated(t, from.Addr) // the replicas no longer hold the keys moved
	}
	node, err := client.MasterForKey(ctx, moved)
	require.NoError(t, err)
	require.Equal(t, moveFrom.Addr, node.Options().Addr, "the client's slot map still names the old master")

	require.Equal(t, int64(3), replicas.Load(), "the client's slot map lists the replicas")
	before := testenv.ReplicaCalls(t, client, "get")
	var viaClient atomic.Int64
	client.AddHook(getCounter{&viaClient})
	for i := range 20 {
		p := NewRoutedPipeline(client)
		a := p.On(ctx, asked).Get(ctx, asked)
		m := p.On(ctx, moved).Get(ctx, moved)
		require.NoError(t, p.Exec(ctx), "run %d", i)
		assert.Equal(t, asked+" value", a.Val(), "run %d", i)
		assert.Equal(t, moved+" value", m.Val(), "run %d", i)
	}
	assert.Equal(t, before, testenv.ReplicaCalls(t, client, "get"), "no replica served a GET")
	assert.Zero(t, viaClient.Load(), "no redirected GET went through the Cluster client")
}

// getCounter counts the GETs that go through a Cluster client's own Process
// (not its nodes').
type getCounter struct{ n *atomic.Int64 }

func (getCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h getCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "get" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (getCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// waitReplicated waits until the replica of the master at addr has every
// write the master made.
func waitReplicated(t *testing.T, addr string) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	n, err := c.Wait(context.Background(), 1, 5000).Result()
	require.NoError(t, err)
	require.Equal(t, int64(1), n, "the replica of %s acknowledged", addr)
}
