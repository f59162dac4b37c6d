package rdb

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// fillPriority fills store with count members named prefix000.. at priority
// p (a priority above MaxRetries).
func (f *fixture) fillPriority(prefix string, count int, p float64) []string {
	f.t.Helper()
	var names []string
	zs := make([]redis.Z, count)
	for i := range zs {
		names = append(names, fmt.Sprintf("%s%03d", prefix, i))
		zs[i] = redis.Z{Score: p, Member: names[i]}
	}
	require.NoError(f.t, f.b.Redis.ZAdd(f.ctx, f.keys.Store, zs...).Err())
	return names
}

// popPriority fills store with count members of priority 50 and pops them
// all in one call.
func (f *fixture) popPriority(count int) CycleResult {
	f.t.Helper()
	f.fillPriority("m", count, 50)
	res := f.cycle(CycleRequest{Priority: true, Max: count})
	require.Len(f.t, res.Deliveries, count)
	return res
}

// Committing a whole pop reads the prepare entries holding its score at once;
// it must still remove only the entries exactly as popped, and nothing else
// that shares the score.
func TestCycleCommitOfAWholePopKeepsLaterDeliveries(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		first := f.popPriority(40)
		popped := first.Deliveries[0].prepare
		// m005 timed out and was popped again; "other" shares the pop's score
		// but is not in this commit.
		later := popped - 40_000
		require.NoError(t, b.Redis.ZAdd(f.ctx, f.keys.Prepare, redis.Z{Score: float64(later), Member: "m005"},
			redis.Z{Score: float64(popped), Member: "other"}).Err())

		f.cycle(CycleRequest{Priority: true, Outcomes: settle(first, Commit)})
		s, ok := f.score(f.keys.Prepare, "m005")
		require.True(t, ok, "a late commit removed a later delivery")
		assert.Equal(t, float64(later), s)
		_, ok = f.score(f.keys.Prepare, "other")
		assert.True(t, ok, "an entry outside the commit was removed")
		assert.Equal(t, int64(2), f.card(f.keys.Prepare), "every other committed entry is gone")
	})
}

// When many more prepare entries share the pop's score than the commit
// names, the commit reads them one by one, with the same result.
func TestCycleCommitAmongManyEntriesOfOneScore(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		first := f.popPriority(2)
		popped := first.Deliveries[0].prepare
		for i := range 5 {
			f.zadd(f.keys.Prepare, float64(popped), fmt.Sprintf("same%d", i))
		}
		later := first.Deliveries[1]
		f.zadd(f.keys.Prepare, float64(popped+1_000), string(later.Member))
		outs := settle(first, Commit)
		require.True(t, onePopCommits(outs))
		f.cycle(CycleRequest{Priority: true, Outcomes: outs})
		_, ok := f.score(f.keys.Prepare, string(first.Deliveries[0].Member))
		assert.False(t, ok, "the committed entry stays")
		_, ok = f.score(f.keys.Prepare, string(later.Member))
		assert.True(t, ok, "a late commit removed a later delivery")
		assert.Equal(t, int64(6), f.card(f.keys.Prepare))
	})
}

// A priority pop reads the members of a window sharing one score without
// their scores; every delivery must still carry its own priority, in order,
// whether the window is uniform, mixed, or longer than the store.
func TestCyclePriorityPopWindows(t *testing.T) {
	cases := []struct {
		name string
		fill map[string]band
		max  int
		want []float64 // priorities of the deliveries, in order (runs: value, count)
	}{
		{"one priority", map[string]band{"a": {40, 500}}, 40, repeat(500, 40)},
		{"the last of the window lower", map[string]band{"a": {39, 700}, "b": {1, 500}, "c": {10, 300}}, 40, append(repeat(700, 39), 500)},
		{"a store shorter than the batch", map[string]band{"a": {10, 200}}, 64, repeat(200, 10)},
		{"a mixed store shorter than the batch", map[string]band{"a": {10, 200}, "b": {5, 100}, "r": {3, 4}}, 64, append(append(repeat(200, 10), repeat(100, 5)...), repeat(0, 3)...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
				f := newFixture(t, b)
				for prefix, fill := range c.fill {
					f.fillPriority(prefix, fill.n, fill.p)
				}
				res := f.cycle(CycleRequest{Priority: true, Max: c.max})
				require.Len(t, res.Deliveries, len(c.want))
				for i, d := range res.Deliveries {
					if c.want[i] == 0 {
						assert.Equal(t, 4, d.RetriesLeft, "delivery %d", i)
						continue
					}
					assert.Equal(t, int64(c.want[i]), d.Priority, "delivery %d", i)
					assert.Equal(t, MaxRetries, d.RetriesLeft)
					s, ok := f.score(f.keys.Prepare, string(d.Member))
					require.True(t, ok)
					assert.Equal(t, float64(d.prepare), s)
				}
			})
		})
	}
}

// A uniform window that holds back members still in prepare reads on from
// an offset and takes the others.
func TestCyclePriorityPopSkipsHeldBackMembersOfOneScore(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.fillPriority("m", 80, 500)
		first := f.cycle(CycleRequest{Priority: true, Max: 40})
		require.Len(t, first.Deliveries, 40)
		// New copies of the first ten, sent while they are in flight.
		for _, d := range first.Deliveries[:10] {
			f.zadd(f.keys.Store, 500, string(d.Member))
		}
		res := f.cycle(CycleRequest{Priority: true, Max: 40})
		require.Len(t, res.Deliveries, 40)
		inFlight := map[string]bool{}
		for _, d := range first.Deliveries {
			inFlight[string(d.Member)] = true
		}
		for _, d := range res.Deliveries {
			assert.False(t, inFlight[string(d.Member)], "%s is in flight", d.Member)
			assert.Equal(t, int64(500), d.Priority)
		}
		assert.Equal(t, int64(10), f.card(f.keys.Store), "the copies wait")
	})
}

// band is count members of one priority.
type band struct {
	n int
	p float64
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// Commits of two pops (two prepare scores) in one call settle member by
// member, a late one among them included.
func TestCycleCommitsOfTwoPops(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		res := f.popPriority(4)
		// The second comes from an older pop (its entry is as popped then);
		// the third's entry belongs to a later delivery.
		older, later := res.Deliveries[1], res.Deliveries[2]
		older.prepare -= 5_000
		laterScore := float64(later.prepare + 1_000)
		require.NoError(t, b.Redis.ZAdd(f.ctx, f.keys.Prepare, redis.Z{Score: float64(older.prepare), Member: older.Member},
			redis.Z{Score: laterScore, Member: later.Member}).Err())
		outs := []Outcome{res.Deliveries[0].Settle(Commit), older.Settle(Commit), res.Deliveries[2].Settle(Commit),
			res.Deliveries[3].Settle(Commit)}
		require.False(t, onePopCommits(outs))
		f.cycle(CycleRequest{Priority: true, Outcomes: outs})
		s, ok := f.score(f.keys.Prepare, string(later.Member))
		require.True(t, ok, "a late commit removed a later delivery")
		assert.Equal(t, laterScore, s)
		assert.Equal(t, int64(1), f.card(f.keys.Prepare))
	})
}

// A commit naming one member twice removes it alone, not another entry of
// the same score (the range removal needs as many distinct commits as
// entries).
func TestCycleCommitNamingAMemberTwice(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		res := f.popPriority(2)
		done, open := res.Deliveries[0], res.Deliveries[1]
		f.cycle(CycleRequest{Priority: true, Outcomes: []Outcome{done.Settle(Commit), done.Settle(Commit)}})
		_, ok := f.score(f.keys.Prepare, string(done.Member))
		assert.False(t, ok, "the committed entry stays")
		_, ok = f.score(f.keys.Prepare, string(open.Member))
		assert.True(t, ok, "an entry not committed was removed")
	})
}
