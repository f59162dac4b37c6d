package rdb

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

func TestCycleTokenFence(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 60, "m")
		res := f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(7)})
		require.Len(t, res.Deliveries, 1)
		owner, err := b.Redis.Get(f.ctx, f.keys.Owner).Result()
		require.NoError(t, err)
		assert.Equal(t, "7", owner)
		f.zadd(f.keys.Store, 70, "n")
		// A newer owner takes over; the old one is refused, and settles nothing.
		res2 := f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(9)})
		require.Equal(t, []string{"n"}, members(res2.Deliveries))
		zombie := f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(7), Outcomes: settle(res, Commit)})
		assert.True(t, zombie.Refused)
		assert.Equal(t, "9", zombie.Owner)
		assert.Empty(t, zombie.Deliveries)
		_, inPrepare := f.score(f.keys.Prepare, "m")
		assert.True(t, inPrepare, "the zombie's commit was applied")
		// A settle-only cycle is fenced too.
		zombie = f.cycle(CycleRequest{Priority: true, Fence: TokenFence(7), Outcomes: settle(res, Commit)})
		assert.True(t, zombie.Refused)
		_, inPrepare = f.score(f.keys.Prepare, "m")
		assert.True(t, inPrepare, "the zombie's settle-only commit was applied")
		// The owner settles.
		f.cycle(CycleRequest{Priority: true, Fence: TokenFence(9), Outcomes: settle(res2, Commit)})
		_, inPrepare = f.score(f.keys.Prepare, "n")
		assert.False(t, inPrepare)
	})
}

func TestCycleRecordFence(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 60, "m")
		// No record: nobody holds the slot yet, so a record fence is refused.
		res := f.cycle(CycleRequest{Priority: true, Max: 1, Fence: RecordFence("5:w1")})
		assert.True(t, res.Refused)
		assert.Equal(t, "", res.Owner)
		require.NoError(t, b.Redis.Set(f.ctx, f.keys.Owner, "5:w1", 0).Err())
		res = f.cycle(CycleRequest{Priority: true, Max: 1, Fence: RecordFence("5:w1")})
		require.Equal(t, []string{"m"}, members(res.Deliveries))
		// Released: the former holder pops and settles nothing.
		require.NoError(t, b.Redis.Set(f.ctx, f.keys.Owner, "5:", 0).Err())
		late := f.cycle(CycleRequest{Priority: true, Max: 1, Fence: RecordFence("5:w1"), Outcomes: settle(res, Commit)})
		assert.True(t, late.Refused)
		assert.Equal(t, "5:", late.Owner)
		_, inPrepare := f.score(f.keys.Prepare, "m")
		assert.True(t, inPrepare)
		// Claimed by another worker: the record fence of the new holder settles.
		require.NoError(t, b.Redis.Set(f.ctx, f.keys.Owner, "6:w2", 0).Err())
		assert.True(t, f.cycle(CycleRequest{Priority: true, Fence: RecordFence("5:w1"), Outcomes: settle(res, Commit)}).Refused)
		assert.False(t, f.cycle(CycleRequest{Priority: true, Fence: RecordFence("6:w2"), Outcomes: settle(res, Commit)}).Refused)
		_, inPrepare = f.score(f.keys.Prepare, "m")
		assert.False(t, inPrepare)
		// A token fence (ZooKeeper) does not take over a slot the Redis
		// coordinator holds, whatever its token...
		f.zadd(f.keys.Store, 80, "k")
		assert.True(t, f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(99)}).Refused)
		// ...but takes one it released, and owns it from then on.
		require.NoError(t, b.Redis.Set(f.ctx, f.keys.Owner, "6:", 0).Err())
		res = f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(3)})
		assert.False(t, res.Refused)
		assert.Equal(t, []string{"k"}, members(res.Deliveries))
		owner, err := b.Redis.Get(f.ctx, f.keys.Owner).Result()
		require.NoError(t, err)
		assert.Equal(t, "3", owner)
		assert.True(t, f.cycle(CycleRequest{Priority: true, Fence: TokenFence(2)}).Refused)
	})
}

// A new owner's first look often finds its slot empty. Its token becomes the
// record even then, so that a former owner's pop arriving later (a stalled
// process, a call held up in the network) is refused; the empty look of a
// former owner is refused too.
func TestCycleTokenFenceOnAnEmptySlot(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 60, "a")
		res := f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(7)})
		require.Len(t, res.Deliveries, 1)
		f.cycle(CycleRequest{Priority: true, Fence: TokenFence(7), Outcomes: settle(res, Commit)})
		// The slot is empty; the new owner looks at it.
		res = f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(9)})
		require.False(t, res.Refused)
		require.Empty(t, res.Deliveries)
		assert.Zero(t, res.NowUs, "an empty slot's look takes the short path")
		owner, err := b.Redis.Get(f.ctx, f.keys.Owner).Result()
		require.NoError(t, err)
		assert.Equal(t, "9", owner)
		// The former owner's empty look and its pop are refused.
		empty := f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(7)})
		assert.True(t, empty.Refused)
		assert.Equal(t, "9", empty.Owner)
		f.zadd(f.keys.Store, 70, "b")
		zombie := f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(7)})
		assert.True(t, zombie.Refused)
		assert.Empty(t, zombie.Deliveries)
		assert.Equal(t, []string{"b"}, members(f.cycle(CycleRequest{Priority: true, Max: 1, Fence: TokenFence(9)}).Deliveries))
		// An exact fence (the Redis coordinator's) and an unfenced look of an
		// empty slot write nothing.
		g := newFixture(t, b)
		assert.False(t, g.cycle(CycleRequest{Priority: true, Max: 1}).Refused)
		assert.False(t, g.cycle(CycleRequest{Priority: true, Max: 1, Fence: RecordFence("5:w1")}).Refused)
		n, err := b.Redis.Exists(g.ctx, g.keys.Owner).Result()
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}
