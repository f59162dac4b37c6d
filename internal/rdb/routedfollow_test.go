package rdb

import (
	"context"
	"fmt"
	"net"
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
//
// A Bounded pipeline's follows wait for their new master at most
// MasterWait, together, as its first masters were waited for.
func TestRoutedPipelineRedirections(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	ctx := context.Background()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, cl.WaitReplicasListed(waitCtx))
	t.Run("to-the-master", func(t *testing.T) { followsToTheMaster(t, cl) })
	t.Run("bounded", func(t *testing.T) { boundedFollowsWaitTogether(t, cl) })
}

func followsToTheMaster(t *testing.T, cl *testenv.PrivateCluster) {
	ctx := context.Background()
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

// boundedFollowsWaitTogether: three keys of one master whose hash slots
// moved to a master cut off from the process since the client read its slot
// map. Each GET is redirected (MOVED) to the cut master; their follows wait
// for it at most MasterWait, together, where each waited the client's read
// timeout in turn (6 s here). While they are out, the gate sends the cut
// master nothing more.
func boundedFollowsWaitTogether(t *testing.T, cl *testenv.PrivateCluster) {
	ctx := context.Background()
	ms, err := cl.Masters(ctx)
	require.NoError(t, err)
	from, to := ms[0], ms[1]
	var keys []string
	for i := 0; len(keys) < 3; i++ {
		k := fmt.Sprintf("{bounded%d}k", i)
		if (testenv.ClusterNode{Slots: from.Slots}).OwnsSlot(testenv.KeySlot(k)) {
			keys = append(keys, k)
		}
	}
	p := testenv.StartPartition(t, to.Addr)
	d := &net.Dialer{Timeout: 5 * time.Second}
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ReadTimeout: 2 * time.Second, MaxRetries: -1,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if addr == to.Addr {
				addr = p.Addr()
			}
			return d.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { client.Close() })
	for _, k := range keys {
		node, err := client.MasterForKey(ctx, k)
		require.NoError(t, err)
		require.Equal(t, from.Addr, node.Options().Addr)
	}
	for _, k := range keys {
		require.NoError(t, cl.GiveSlot(ctx, testenv.KeySlot(k), to))
	}
	p.Cut()
	var gate masterGate
	exec := func() (*RoutedPipeline, []redis.Pipeliner, time.Duration, error) {
		rp := NewRoutedPipeline(client).Bounded(&gate)
		var on []redis.Pipeliner
		for _, k := range keys {
			pipe := rp.On(ctx, k)
			on = append(on, pipe)
			pipe.Get(ctx, k)
		}
		start := time.Now()
		err := rp.Exec(ctx)
		return rp, on, time.Since(start), err
	}
	rp, on, took, err := exec()
	t.Logf("three follows to a cut master: %v", took)
	assert.ErrorIs(t, err, ErrUnanswered)
	assert.Less(t, took, 2*MasterWait+500*time.Millisecond, "the follows waited for the cut master in turn")
	assert.False(t, rp.Answered(on[0]), "a follow left running fills its command")
	assert.True(t, gate.busy(to.Addr))

	_, _, took, err = exec()
	assert.ErrorIs(t, err, ErrUnanswered)
	assert.Less(t, took, MasterWait, "follows sent into the cut while the first are out")

	require.Eventually(t, func() bool { return !gate.busy(to.Addr) }, 5*time.Second, 10*time.Millisecond, "the follows left running never ended")
	p.Heal()
	require.Eventually(t, func() bool {
		rp, on, _, err = exec()
		return err == nil
	}, 10*time.Second, 50*time.Millisecond, "the healed master never answered")
	assert.True(t, rp.Answered(on[0]))
}
