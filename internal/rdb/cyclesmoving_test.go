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

// A group's pops on one master whose slots move (a private Cluster): the
// first slot's hash slot is migrating with some of its keys on the old master
// (its script refused, TRYAGAIN), and the second's has moved to another
// master without the client's slot map knowing (MOVED). Each call either
// ran once, and returns what it popped, or returns its refusal and changed
// nothing; under -race, no data race. (go-redis's Cluster pipeline re-sends
// a whole node's batch when its first command is refused with TRYAGAIN,
// while also sending a redirected one to its new node: two goroutines then
// run one command at once.)
func TestCyclesOfAMasterWhoseSlotsMove(t *testing.T) {
	ctx := context.Background()
	cl, client, br := privateBroker(t, "moving")
	ks := br.keys

	// Two topic slots whose hash slots share a master.
	var a, b SlotKeys
	var from, to testenv.ClusterMaster
	for i := 0; b.Store == "" && i < 256; i++ {
		k := ks.Slot("t", i)
		f, tt, err := cl.SlotMove(ctx, testenv.KeySlot(k.Store))
		require.NoError(t, err)
		switch {
		case a.Store == "":
			a, from, to = k, f, tt
		case f.Addr == from.Addr:
			b = k
		}
	}
	require.NotEmpty(t, b.Store, "no two topic slots on one master")
	for _, k := range []SlotKeys{a, b} {
		for j := range 3 {
			require.NoError(t, client.ZAdd(ctx, k.Store, redis.Z{Score: float64(90 - j), Member: k.Store + strconv.Itoa(j)}).Err())
		}
	}
	require.NoError(t, client.Ping(ctx).Err()) // the slot map is loaded

	slotA, slotB := testenv.KeySlot(a.Store), testenv.KeySlot(b.Store)
	require.NoError(t, cl.StartMigration(ctx, slotB, from, to))
	_, _, err := cl.FinishMigration(ctx, slotB, from, to)
	require.NoError(t, err)
	require.NoError(t, cl.StartMigration(ctx, slotA, from, to))

	calls := slotCycles([]SlotKeys{a, b}, 5, Fence{})
	br.Cycles(ctx, calls)
	for i, c := range calls {
		k := []SlotKeys{a, b}[i]
		prepared, err := client.ZCard(ctx, k.Prepare).Result()
		require.NoError(t, err)
		t.Logf("slot %d (hash slot %d): err %v, %d delivered, %d in prepare", i, testenv.KeySlot(k.Store), c.Err,
			len(c.Res.Deliveries), prepared)
		if c.Err != nil {
			assert.True(t, SlotMoving(c.Err), "slot %d: a refusal while its hash slot moves: %v", i, c.Err)
			assert.Zero(t, prepared, "slot %d: a refused call changed nothing", i)
			continue
		}
		assert.Len(t, c.Res.Deliveries, 3, "slot %d", i)
		assert.Equal(t, int64(3), prepared, "slot %d: popped once", i)
	}
	require.Error(t, calls[0].Err, "the migrating slot's call was refused")
	_, _, err = cl.FinishMigration(ctx, slotA, from, to)
	require.NoError(t, err)
}
