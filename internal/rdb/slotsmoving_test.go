package rdb

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// movingPair is two topic slots whose hash slots shared a master of a
// private Cluster, each holding three messages: a's hash slot is migrating
// to another master with its keys still on the old one (a script on them is
// refused there, TRYAGAIN: some are missing), and b's has moved to that
// other master without the client's slot map knowing (MOVED).
type movingPair struct {
	cl       *testenv.PrivateCluster
	client   *redis.ClusterClient
	br       *redisBroker
	a, b     SlotKeys
	from, to testenv.ClusterMaster
}

func newMovingPair(t *testing.T, ns string) *movingPair {
	ctx := context.Background()
	cl, client, br := privateBroker(t, ns)
	p := &movingPair{cl: cl, client: client, br: br}
	for i := 0; p.b.Store == "" && i < 256; i++ {
		k := br.keys.Slot("t", i)
		f, to, err := cl.SlotMove(ctx, testenv.KeySlot(k.Store))
		require.NoError(t, err)
		switch {
		case p.a.Store == "":
			p.a, p.from, p.to = k, f, to
		case f.Addr == p.from.Addr:
			p.b = k
		}
	}
	require.NotEmpty(t, p.b.Store, "no two topic slots on one master")
	for _, k := range []SlotKeys{p.a, p.b} {
		for j := range 3 {
			require.NoError(t, client.ZAdd(ctx, k.Store, redis.Z{Score: float64(90 - j), Member: k.Store + strconv.Itoa(j)}).Err())
		}
	}
	require.NoError(t, client.Ping(ctx).Err()) // the slot map is loaded
	slotA, slotB := testenv.KeySlot(p.a.Store), testenv.KeySlot(p.b.Store)
	require.NoError(t, cl.StartMigration(ctx, slotB, p.from, p.to))
	_, _, err := cl.FinishMigration(ctx, slotB, p.from, p.to)
	require.NoError(t, err)
	require.NoError(t, cl.StartMigration(ctx, slotA, p.from, p.to))
	t.Cleanup(func() {
		_, _, err := cl.FinishMigration(ctx, slotA, p.from, p.to)
		assert.NoError(t, err)
	})
	return p
}

// A group's pops on one master whose slots move (movingPair: the first's
// refused with TRYAGAIN, the second's MOVED). Each call either ran once, and
// returns what it popped, or returns its refusal and changed nothing; under
// -race, no data race. (go-redis's Cluster pipeline re-sends a whole node's
// batch when its first command is refused with TRYAGAIN, while also sending
// a redirected one to its new node: two goroutines then run one command at
// once.)
func TestCyclesOfAMasterWhoseSlotsMove(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	ctx := context.Background()
	p := newMovingPair(t, "moving")
	calls := slotCycles([]SlotKeys{p.a, p.b}, 5, Fence{})
	p.br.Cycles(ctx, calls)
	for i, c := range calls {
		k := []SlotKeys{p.a, p.b}[i]
		prepared, err := p.client.ZCard(ctx, k.Prepare).Result()
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
}

// The idle sweep of a master whose slots move (movingPair, both slots
// holding messages): the migrating slot's EXISTS is refused, which is no
// failure and counts as empty (its wake-ups, and its channel's move, stand
// for it); the moved slot's is redirected, or answered once the slot map
// knows the move; under -race, no data race (the same go-redis pipeline
// retry as above).
func TestIdleSweepOfAMasterWhoseSlotsMove(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	ctx := context.Background()
	p := newMovingPair(t, "sweepmoving")
	_, err := p.br.AnyWaiting(ctx, []SlotKeys{p.a, p.b})
	require.NoError(t, err)
	waiting, err := p.br.AnyWaiting(ctx, []SlotKeys{p.a})
	require.NoError(t, err)
	assert.False(t, waiting, "a slot whose hash slot migrates counts as empty")
	assert.Eventually(t, func() bool { // a redirection asked for a reload of the slot map
		waiting, err := p.br.AnyWaiting(ctx, []SlotKeys{p.b})
		return err == nil && waiting
	}, 5*time.Second, 50*time.Millisecond, "once the slot map knows the moved slot, its messages are found")
}
