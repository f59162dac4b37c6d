package rdb

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A group's pops (Cycles) run each master's calls in a pipeline of that
// master's own client, which takes the Cluster client's MaxRetries. With
// MaxRetries set, go-redis sends a whole pipeline again when its first
// command is refused (TRYAGAIN, CLUSTERDOWN): a lead slot whose hash slot
// migrates made every other call of the group run again, so they popped
// twice and reported only the last pop, the first run's messages left in
// prepare until the consume timeout. Such a pipeline is now led by a command
// that tells go-redis never to send it again (noRetry): each call runs once.
func TestCyclesRunOnceWhenTheLeadSlotMigratesAndTheClientRetries(t *testing.T) {
	const maxRetries = 3
	ctx := context.Background()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), MaxRetries: maxRetries})
	br := New(client, NewKeyspace("retrycycles")).(*redisBroker)
	t.Cleanup(func() {
		br.Close(context.Background())
		client.Close()
	})
	var a, c SlotKeys
	var from, to testenv.ClusterMaster
	for i := 0; c.Store == "" && i < 256; i++ {
		k := br.keys.Slot("t", i)
		f, dst, err := cl.SlotMove(ctx, testenv.KeySlot(k.Store))
		require.NoError(t, err)
		switch {
		case a.Store == "":
			a, from, to = k, f, dst
		case f.Addr == from.Addr:
			c = k
		}
	}
	require.NotEmpty(t, c.Store, "no two topic slots on one master")
	br.Cycles(ctx, slotCycles([]SlotKeys{a, c}, 0, Fence{})) // the master has the script (no NOSCRIPT below)
	for _, k := range []SlotKeys{a, c} {
		for j := range 3 {
			require.NoError(t, client.ZAdd(ctx, k.Store, redis.Z{Score: float64(90 - j), Member: k.Store + strconv.Itoa(j)}).Err())
		}
	}
	require.NoError(t, client.Ping(ctx).Err()) // the slot map is loaded
	slotA := testenv.KeySlot(a.Store)
	require.NoError(t, cl.StartMigration(ctx, slotA, from, to))
	t.Cleanup(func() {
		_, _, err := cl.FinishMigration(ctx, slotA, from, to)
		assert.NoError(t, err)
	})

	calls := slotCycles([]SlotKeys{a, c}, 5, Fence{})
	br.Cycles(ctx, calls)
	t.Logf("lead (migrating) slot: err %v", calls[0].Err)
	prepared, err := client.ZCard(ctx, c.Prepare).Result()
	require.NoError(t, err)
	stored, err := client.ZCard(ctx, c.Store).Result()
	require.NoError(t, err)
	t.Logf("other slot of the master: err %v, %d delivered, %d in prepare, %d left in store",
		calls[1].Err, len(calls[1].Res.Deliveries), prepared, stored)
	require.NoError(t, calls[1].Err)
	assert.Equal(t, prepared, int64(len(calls[1].Res.Deliveries)),
		"every message the call moved to prepare is in its result (the call ran once)")
}
