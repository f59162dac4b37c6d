package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A worker of the Redis coordinator does not join while a process of the
// local coordinator stands in the namespace's presence set: the local one
// shares the namespace with nobody and gives its leases no fence, so a
// worker frozen or cut off past its membership's expiry, back, must not
// claim slots beside it. It joins and serves once the entry is gone.
func TestRedisWorkerDoesNotJoinBesideALocalProcess(t *testing.T) {
	t.Parallel()
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	co := rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns))
	ctx := context.Background()
	other, _, err := co.Presence(ctx, "local/elsewhere:1:0x1", 10*time.Second, "join", testTopic)
	require.NoError(t, err)
	require.Empty(t, other)

	board := newSlotBoard()
	startWorker(t, b, ns, "a", board, 2, 2*time.Second)
	time.Sleep(2 * time.Second)
	assert.Zero(t, board.count("a"), "slots held beside a local process")
	members, err := RedisMembers(ctx, b.Redis, ns)
	require.NoError(t, err)
	assert.Empty(t, members, "a member joined beside a local process")

	_, _, err = co.Presence(ctx, "local/elsewhere:1:0x1", 0, "leave")
	require.NoError(t, err)
	waitFor(t, board, 10*time.Second, "a serves every slot once the local process left", func() bool {
		return board.count("a") == 16
	})
}

// A process of the local coordinator finds a worker of the Redis
// coordinator whose membership has not expired, though its presence entry
// has (its leases last until its membership expires), and refuses to join.
func TestLocalPresenceRefusedBesideALiveRedisMember(t *testing.T) {
	t.Parallel()
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	co := rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns))
	ctx := context.Background()
	_, err := co.Join(ctx, "w.x.1", 2*time.Second, "{}", false)
	require.NoError(t, err)
	other, _, err := co.Presence(ctx, "local/here:1:0x1", 3*time.Second, "join", testTopic)
	require.NoError(t, err)
	assert.Equal(t, "redis/member w.x.1", other)

	time.Sleep(2100 * time.Millisecond) // the membership expires
	other, _, err = co.Presence(ctx, "local/here:1:0x1", 3*time.Second, "join", testTopic)
	require.NoError(t, err)
	assert.Empty(t, other)
	_, err = co.Join(ctx, "w.x.2", 2*time.Second, "{}", false)
	assert.ErrorIs(t, err, rdb.ErrLocalPresence)
}
