package rdb

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// runLevel is a run of members of one store score.
type runLevel struct {
	score float64
	count int
}

// fillRuns stores count members per level, named by their level, and returns
// each member's score.
func (f *fixture) fillRuns(levels []runLevel) map[string]float64 {
	f.t.Helper()
	want := map[string]float64{}
	var zs []redis.Z
	for li, l := range levels {
		for i := range l.count {
			m := fmt.Sprintf("L%d-%04d", li, i)
			want[m] = l.score
			zs = append(zs, redis.Z{Score: l.score, Member: m})
		}
	}
	require.NoError(f.t, f.b.Redis.ZAdd(f.ctx, f.keys.Store, zs...).Err())
	return want
}

// A priority pop across runs of equal scores reads the scores once per run
// instead of once per entry, when the runs are long enough; it must report
// every delivery's priority (or retries left) exactly as an entry-by-entry
// read does, in priority order, with some top entries held back by copies in
// prepare, and a restore must put each back with its own score.
func TestCyclePriorityPopAcrossRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		levels []runLevel
	}{
		{"long-runs", []runLevel{{900, 40}, {800, 100}, {700, 60}, {3, 5}}},
		{"short-runs", []runLevel{{900, 40}, {850, 1}, {840, 2}, {830, 1}, {820, 1}, {800, 100}}},
		{"one-run-below", []runLevel{{1 << 40, 70}, {17, 70}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
				f := newFixture(t, b)
				want := f.fillRuns(tc.levels)
				// Copies of three top members are in flight: they stay behind.
				inFlight := []string{"L0-0001", "L0-0005", "L0-0007"}
				for _, m := range inFlight {
					f.zadd(f.keys.Prepare, nowMs()/1000*1000+16, m)
				}
				total := len(want) - len(inFlight)
				res := f.cycle(CycleRequest{Priority: true, Max: total})
				require.Equal(t, total, len(res.Deliveries))
				prev := float64(1 << 53)
				for _, d := range res.Deliveries {
					m := string(d.Member)
					score := want[m]
					require.NotContains(t, inFlight, m, "a member with a copy in flight was popped")
					if score > MaxRetries {
						assert.Equal(t, int64(score), d.Priority, "priority of %s", m)
						assert.Equal(t, MaxRetries, d.RetriesLeft, "retries left of %s", m)
					} else {
						assert.Equal(t, int(score), d.RetriesLeft, "retries left of %s", m)
						assert.Zero(t, d.Priority, "priority of %s", m)
					}
					assert.LessOrEqual(t, score, prev, "priority order at %s", m)
					prev = score
				}

				f.cycle(CycleRequest{Priority: true, Outcomes: settle(res, Restore)})
				for _, d := range res.Deliveries {
					s, ok := f.score(f.keys.Store, string(d.Member))
					require.True(t, ok, "%s was not restored", d.Member)
					assert.Equal(t, want[string(d.Member)], s, "%s restored with another score", d.Member)
				}
			})
		})
	}
}
