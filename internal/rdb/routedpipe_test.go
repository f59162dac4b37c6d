package rdb

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// unservedAndMoved prepares, on a private Cluster that serves the slots it
// still can (PartialCoverage), two keys whose hash slots the returned
// client's slot map places on one master: unserved, whose hash slot that
// master no longer serves (CLUSTER DELSLOTS there: it answers CLUSTERDOWN
// Hash slot not served), and moved, whose hash slot has moved to another
// master (MOVED). A batch of that master's led by a command on unserved is
// what makes go-redis's Cluster pipeline run the command on moved twice.
func unservedAndMoved(t *testing.T) (client *redis.ClusterClient, unserved, moved string) {
	ctx := context.Background()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{PartialCoverage: true})
	client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { client.Close() })
	moved = "{moved}count"
	from, to, err := cl.SlotMove(ctx, testenv.KeySlot(moved))
	require.NoError(t, err)
	for i := 0; unserved == ""; i++ {
		k := fmt.Sprintf("{unserved%d}count", i)
		addr, err := cl.MasterOf(ctx, testenv.KeySlot(k))
		require.NoError(t, err)
		if addr == from.Addr && testenv.KeySlot(k) != testenv.KeySlot(moved) {
			unserved = k
		}
	}
	require.NoError(t, client.Ping(ctx).Err()) // the slot map is loaded
	require.NoError(t, cl.StartMigration(ctx, testenv.KeySlot(moved), from, to))
	_, _, err = cl.FinishMigration(ctx, testenv.KeySlot(moved), from, to)
	require.NoError(t, err)
	direct := redis.NewClient(&redis.Options{Addr: from.Addr})
	defer direct.Close()
	require.NoError(t, direct.Do(ctx, "CLUSTER", "DELSLOTS", testenv.KeySlot(unserved)).Err())
	require.ErrorContains(t, direct.Incr(ctx, unserved).Err(), "CLUSTERDOWN Hash slot not served")
	for _, k := range []string{unserved, moved} {
		node, err := client.MasterForKey(ctx, k)
		require.NoError(t, err)
		require.Equal(t, from.Addr, node.Options().Addr, "the client's slot map still places %s on %s", k, from.Addr)
	}
	return client, unserved, moved
}

// A routed batch on a master that refuses its first command (CLUSTERDOWN:
// the hash slot is not served) and redirects another (MOVED): the
// redirected command runs once, on its new master; the refusal stays with
// its command. Under -race, no data race.
func TestRoutedPipelineRunsARedirectedCommandOnce(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	ctx := context.Background()
	client, unserved, moved := unservedAndMoved(t)
	p := NewRoutedPipeline(client)
	refused := p.On(ctx, unserved).Incr(ctx, unserved)
	counted := p.On(ctx, moved).Incr(ctx, moved)
	err := p.Exec(ctx)
	require.Error(t, err)
	assert.ErrorContains(t, refused.Err(), "CLUSTERDOWN")
	assert.Equal(t, err, refused.Err(), "Exec returns the first failure")
	require.NoError(t, counted.Err())
	assert.Equal(t, int64(1), counted.Val())
	n, err := client.Get(ctx, moved).Int64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the redirected INCR ran once")
}

// On every backend: commands on keys of many hash slots each run once and
// answer in place; Exec returns the first failure, not a missing key's
// redis.Nil before it (which would hide the failure from a caller that
// ignores redis.Nil).
func TestRoutedPipelineAnswersEachCommand(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		slots := NewKeyspace(testenv.Namespace(t, b)).Slots("t", 16)
		p := NewRoutedPipeline(b.Redis)
		missing := p.On(ctx, slots[0].Owner).Get(ctx, slots[0].Owner)
		incrs := make([]*redis.IntCmd, len(slots))
		for i, k := range slots {
			pipe := p.On(ctx, k.Owner)
			pipe.IncrBy(ctx, k.Owner, int64(i))
			incrs[i] = pipe.Incr(ctx, k.Owner)
		}
		require.NoError(t, p.Exec(ctx))
		assert.ErrorIs(t, missing.Err(), redis.Nil)
		for i, c := range incrs {
			require.NoError(t, c.Err())
			assert.Equal(t, int64(i+1), c.Val(), "slot %d", i)
		}

		require.NoError(t, b.Redis.Set(ctx, slots[1].Owner, "not a number", 0).Err())
		p = NewRoutedPipeline(b.Redis)
		missing = p.On(ctx, slots[0].Prepare).Get(ctx, slots[0].Prepare)
		failed := p.On(ctx, slots[1].Owner).Incr(ctx, slots[1].Owner)
		counted := p.On(ctx, slots[2].Owner).Incr(ctx, slots[2].Owner)
		err := p.Exec(ctx)
		require.Error(t, err)
		assert.Equal(t, failed.Err(), err)
		assert.ErrorIs(t, missing.Err(), redis.Nil)
		assert.Equal(t, int64(4), counted.Val())
	})
}

// A refusal that says the slot map is stale (CLUSTERDOWN Hash slot not
// served) asks for the map's reload, as the Cluster client's own pipeline
// did.
func TestRoutedPipelineReloadsTheSlotMapAfterARefusal(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	ctx := context.Background()
	client, unserved, _ := unservedAndMoved(t)
	topo := topologyOf(client)
	require.Zero(t, topo.last.Load(), "no reload asked for yet")
	p := NewRoutedPipeline(client)
	refused := p.On(ctx, unserved).Incr(ctx, unserved)
	require.Error(t, p.Exec(ctx))
	assert.ErrorContains(t, refused.Err(), "CLUSTERDOWN")
	assert.NotZero(t, topo.last.Load(), "the refusal asked for a reload of the slot map")
}
