package reshard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// coordHold is how long the coordinator's hash slot stays migrating, its
// keys still on the old master, before they move; coordKeyPause is the
// pause between two keys' moves, each key alone, while the heartbeats'
// scripts are refused (TRYAGAIN: their keys split between two masters).
const (
	coordHold     = 3 * time.Second
	coordKeyPause = 300 * time.Millisecond
)

// TestCoordinatorSlotMigratesUnderWorkers moves the hash slot of the Redis
// coordinator's keys (membership, leader lease, assignments: one hash tag
// per namespace) to another master while two workers consume a 64-slot
// topic and a producer sends to it (Send and SendBatch by turns): the slot
// is held migrating for 3 s, then its keys move one at a time, 300 ms apart
// (a slow resharding: for two seconds or so every heartbeat is refused),
// and it is handed over. The
// coordinator waits that out: no slot changes hands (the owner records and
// their fencing tokens are the same after), both workers stay members,
// every message sent is delivered, no two listeners hold one slot at once,
// and nothing is logged at Warn (before, each refused heartbeat was a Warn
// line: six of them in each of two runs).
func TestCoordinatorSlotMigratesUnderWorkers(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	const ns = "coordslot"
	l, producer := startLedger(t, cl, ns)
	var owners []rmq.SlotOwner
	require.Eventually(t, func() bool { // every slot held, by both workers between them
		got, err := producer.Owners(ctx, "t")
		if err != nil {
			return false
		}
		holders := map[string]bool{}
		for _, o := range got {
			if o.Holder == "" || o.Holder != o.Worker {
				return false
			}
			holders[o.Holder] = true
		}
		owners = got
		return len(holders) == 2
	}, 30*time.Second, 50*time.Millisecond, "the slots are not spread over both workers")

	stop := l.produce(producer, 1)

	hashSlot, from, to := migrateCoordSlot(t, cl, ns)
	time.Sleep(coordHold)
	split := time.Now()
	_, keys, err := cl.FinishMigrationSlowly(ctx, hashSlot, from, to, coordKeyPause)
	splitFor := time.Since(split)
	require.NoError(t, err)
	time.Sleep(coordHold) // heartbeats and the leader's checks go to the new master
	stop()

	l.awaitDelivered(t)
	after, err := producer.Owners(ctx, "t")
	require.NoError(t, err)
	workers, err := producer.Workers(ctx)
	require.NoError(t, err)
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("the coordinator's hash slot %d (%d keys) migrated %s → %s, held %v, its keys split for %v; "+
		"sent %d, delivered %d, send errors %v, overlapping listener calls %d", hashSlot, keys, from.Addr, to.Addr,
		coordHold, splitFor.Round(time.Millisecond), len(l.acked), len(l.delivered), l.sendErrs, l.overlaps.Load())
	assert.Greater(t, keys, 3, "the coordinator's keys moved")
	assert.Equal(t, owners, after, "a slot changed hands while the coordinator's keys moved")
	assert.Len(t, workers, 2, "both workers are still members")
	assert.Empty(t, l.sendErrs, "Send failed")
	assert.Zero(t, l.overlaps.Load(), "two listeners held one slot at once")
	assert.Empty(t, l.warned.Logged(), "logged at Warn while the coordinator's keys moved")
}

// migrateCoordSlot sets the hash slot of namespace ns's coordinator keys
// (its hash tag) migrating from its master on cl to another, and returns
// it and the two masters.
func migrateCoordSlot(t *testing.T, cl *testenv.PrivateCluster, ns string) (hashSlot int, from, to testenv.ClusterMaster) {
	t.Helper()
	hashSlot = testenv.KeySlot(ns)
	from, to, err := cl.SlotMove(context.Background(), hashSlot)
	require.NoError(t, err)
	require.NoError(t, cl.StartMigration(context.Background(), hashSlot, from, to))
	return hashSlot, from, to
}
