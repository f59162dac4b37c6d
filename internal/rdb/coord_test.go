package rdb

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// coordFixture is the coordination I/O of one namespace on one backend.
type coordFixture struct {
	b   testenv.Backend
	ks  Keyspace
	co  Coordination
	ctx context.Context
}

func newCoordFixture(t *testing.T, b testenv.Backend) *coordFixture {
	ks := NewKeyspace(testenv.Namespace(t, b))
	return &coordFixture{b: b, ks: ks, co: NewCoordination(b.Redis, ks), ctx: context.Background()}
}

// advance moves the server's clock by d (miniredis) or sleeps d (real servers).
func (f *coordFixture) advance(d time.Duration, start *time.Time) {
	if f.b.Mini != nil {
		*start = start.Add(d)
		f.b.Mini.SetTime(*start)
		return
	}
	time.Sleep(d)
}

func TestMembershipExpiresForGoodAndTheLeaderDropsIt(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newCoordFixture(t, b)
		clock := time.Now()
		if b.Mini != nil {
			b.Mini.SetTime(clock)
		}
		ttl := 300 * time.Millisecond
		exp, err := f.co.Join(f.ctx, "a", ttl, `{"host":"h"}`, false)
		require.NoError(t, err)
		assert.Greater(t, exp, int64(0))
		_, err = f.co.Join(f.ctx, "b", 10*time.Second, `{}`, false)
		require.NoError(t, err)

		beat, err := f.co.Heartbeat(f.ctx, "a", ttl, true)
		require.NoError(t, err)
		assert.Equal(t, "a", beat.Leader, "a free leader lease is taken")
		assert.Greater(t, beat.ExpiryMs, beat.NowMs)
		assert.InDelta(t, float64(ttl), float64(beat.LeaderLeft), float64(50*time.Millisecond))
		assert.Greater(t, beat.NextExpiry, beat.NowMs, "b's expiry")
		v0 := beat.Version

		beat, err = f.co.Heartbeat(f.ctx, "b", 10*time.Second, true)
		require.NoError(t, err)
		assert.Equal(t, "a", beat.Leader, "the lease stays with a")

		f.advance(ttl+100*time.Millisecond, &clock)
		alive, err := f.co.Alive(f.ctx, []string{"a", "b", "nobody"})
		require.NoError(t, err)
		assert.Equal(t, []bool{false, true, false}, alive)
		// Expired: never renewed, and never revived by an update.
		beat, err = f.co.Heartbeat(f.ctx, "a", ttl, true)
		require.NoError(t, err)
		assert.Equal(t, int64(-1), beat.ExpiryMs)
		exp, err = f.co.Join(f.ctx, "a", ttl, `{}`, true)
		require.NoError(t, err)
		assert.Equal(t, int64(-1), exp)
		if b.Mini == nil {
			// The leader lease expired with a (a real server expires keys itself).
			beat, err = f.co.Heartbeat(f.ctx, "b", 10*time.Second, true)
			require.NoError(t, err)
			assert.Equal(t, "b", beat.Leader, "b takes the expired leader lease")
			assert.Greater(t, beat.Version, v0, "the leader dropped a")
			workers, err := f.co.Workers(f.ctx)
			require.NoError(t, err)
			assert.Equal(t, []string{"b"}, keysOf(workers))
		}
	})
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestLeaveGivesUpTheLeaderLease(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newCoordFixture(t, b)
		for _, id := range []string{"a", "b"} {
			_, err := f.co.Join(f.ctx, id, 5*time.Second, `{}`, false)
			require.NoError(t, err)
		}
		beat, err := f.co.Heartbeat(f.ctx, "a", 5*time.Second, true)
		require.NoError(t, err)
		require.Equal(t, "a", beat.Leader)
		require.NoError(t, f.co.Leave(f.ctx, "a"))
		beat, err = f.co.Heartbeat(f.ctx, "b", 5*time.Second, false)
		require.NoError(t, err)
		assert.Equal(t, "", beat.Leader, "b may not lead: it did not ask")
		beat, err = f.co.Heartbeat(f.ctx, "b", 5*time.Second, true)
		require.NoError(t, err)
		assert.Equal(t, "b", beat.Leader)
		alive, err := f.co.Alive(f.ctx, []string{"a", "b"})
		require.NoError(t, err)
		assert.Equal(t, []bool{false, true}, alive)
	})
}

func TestOnlyTheLeaderAssigns(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newCoordFixture(t, b)
		_, err := f.co.Join(f.ctx, "a", 5*time.Second, `{}`, false)
		require.NoError(t, err)
		_, err = f.co.Heartbeat(f.ctx, "a", 5*time.Second, true)
		require.NoError(t, err)
		e, err := f.co.Assign(f.ctx, "b", map[string]string{"t": "by b"})
		require.NoError(t, err)
		assert.Equal(t, int64(-1), e)
		e, err = f.co.Assign(f.ctx, "a", map[string]string{"t": "x", "u": "y"})
		require.NoError(t, err)
		assert.Equal(t, int64(1), e)
		got, err := f.co.Assignments(f.ctx, []string{"t", "u", "none"})
		require.NoError(t, err)
		assert.Equal(t, []string{"x", "y", ""}, got)
		beat, err := f.co.Heartbeat(f.ctx, "a", 5*time.Second, true)
		require.NoError(t, err)
		assert.Equal(t, int64(1), beat.Epoch)
	})
}

func TestClaimAndReleaseOwnerRecords(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newCoordFixture(t, b)
		slots := f.ks.OwnerKeys("t", 3)
		recs, err := f.co.Claim(f.ctx, "a", slots, []string{"", "", ""})
		require.NoError(t, err)
		tokens := make([]int64, 3)
		for i, r := range recs {
			tok, holder, ok := strings.Cut(r, ":")
			require.True(t, ok, r)
			assert.Equal(t, "a", holder)
			tokens[i], err = strconv.ParseInt(tok, 10, 64)
			require.NoError(t, err)
			assert.InDelta(t, float64(time.Now().UnixMilli()), float64(tokens[i]), 60_000, "a fresh token is the Redis time in ms")
		}
		owners, err := f.co.Owners(f.ctx, slots)
		require.NoError(t, err)
		assert.Equal(t, recs, owners)

		// A claim on a stale read changes nothing.
		again, err := f.co.Claim(f.ctx, "b", slots[:1], []string{""})
		require.NoError(t, err)
		assert.Equal(t, []string{""}, again)

		// The same claim sent again (a retry after a lost reply) finds its
		// own record: won, unchanged.
		retried, err := f.co.Claim(f.ctx, "a", slots[:1], []string{""})
		require.NoError(t, err)
		assert.Equal(t, recs[:1], retried)
		owners, err = f.co.Owners(f.ctx, slots)
		require.NoError(t, err)
		assert.Equal(t, recs, owners, "a retried claim rewrites nothing")

		// Released, then claimed by b with a higher token.
		require.NoError(t, f.co.Release(f.ctx, slots[:2], []string{recs[0], "0:someone-else"}))
		owners, err = f.co.Owners(f.ctx, slots)
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatInt(tokens[0], 10)+":", owners[0])
		assert.Equal(t, recs[1], owners[1], "a release of a record not held changes nothing")
		b1, err := f.co.Claim(f.ctx, "b", slots[:1], owners[:1])
		require.NoError(t, err)
		tok, holder, _ := strings.Cut(b1[0], ":")
		assert.Equal(t, "b", holder)
		n, _ := strconv.ParseInt(tok, 10, 64)
		assert.Greater(t, n, tokens[0], "tokens only grow")

		// A record whose token is ahead of the clock still grows by one.
		ahead := time.Now().Add(time.Hour).UnixMilli()
		require.NoError(t, b.Redis.Set(f.ctx, slots[2], strconv.FormatInt(ahead, 10)+":", 0).Err())
		c2, err := f.co.Claim(f.ctx, "c", slots[2:], []string{strconv.FormatInt(ahead, 10) + ":"})
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatInt(ahead+1, 10)+":c", c2[0])
	})
}

// A slot without an owner record reads "", and a failed read of another
// slot's is returned, not hidden behind the missing one.
func TestOwnersReturnsAFailureAfterAMissingRecord(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newCoordFixture(t, b)
		slots := f.ks.OwnerKeys("t", 3)
		require.NoError(t, b.Redis.Set(f.ctx, slots[2], "7:a", 0).Err())
		owners, err := f.co.Owners(f.ctx, slots)
		require.NoError(t, err)
		assert.Equal(t, []string{"", "", "7:a"}, owners)

		require.NoError(t, b.Redis.SAdd(f.ctx, slots[1], "not a record").Err())
		_, err = f.co.Owners(f.ctx, slots)
		assert.ErrorContains(t, err, "WRONGTYPE")
	})
}

func TestClaimLoadsTheScriptAfterAFlush(t *testing.T) {
	testenv.ForEachReal(t, func(t *testing.T, b testenv.Backend) {
		f := newCoordFixture(t, b)
		require.NoError(t, b.Redis.ScriptFlush(f.ctx).Err())
		recs, err := f.co.Claim(f.ctx, "a", f.ks.OwnerKeys("t", 8), make([]string, 8))
		require.NoError(t, err)
		for _, r := range recs {
			assert.True(t, strings.HasSuffix(r, ":a"), r)
		}
	})
}

func TestPresenceRefusesNeighboursThatCannotShare(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newCoordFixture(t, b)
		join := func(me string) string {
			t.Helper()
			other, _, err := f.co.Presence(f.ctx, me, 5*time.Second, "join")
			require.NoError(t, err)
			return other
		}
		assert.Equal(t, "", join("redis/p1"))
		assert.Equal(t, "", join("redis/p2"), "workers of one coordinator share a namespace")
		assert.Equal(t, "redis/p1", join("local/p3"), "a local process shares with nobody")
		assert.Equal(t, "redis/p1", join("zookeeper/p4"), "nor do two coordinators")
		present, err := f.co.PresentWorkers(f.ctx)
		require.NoError(t, err)
		assert.Len(t, present, 2, "refused joins add nothing")
		_, _, err = f.co.Presence(f.ctx, "redis/p1", 0, "leave")
		require.NoError(t, err)
		_, _, err = f.co.Presence(f.ctx, "redis/p2", 0, "leave")
		require.NoError(t, err)
		assert.Equal(t, "", join("local/p3"))
		assert.Equal(t, "local/p3", join("local/p5"))
		other, _, err := f.co.Presence(f.ctx, "local/p5", 5*time.Second, "renew")
		require.NoError(t, err)
		assert.Equal(t, "local/p3", other, "a renewal reports the conflict and stays")
	})
}
