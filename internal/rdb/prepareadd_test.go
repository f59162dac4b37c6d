package rdb

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// skiplistFirst is the member cycle.lua puts before a large batch into an
// empty prepare (its SKIPLIST_FIRST).
var skiplistFirst = strings.Repeat("~", 1056)

// A pop of more entries than a listpack holds, into an empty prepare, must
// leave prepare holding exactly the popped entries with the scores the pop
// reported, in either order, also when one of them is the member the script
// puts first, and also when some were popped ahead of their due time.
func TestCycleLargePopIntoAnEmptyPrepare(t *testing.T) {
	const count = 300
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		for _, tc := range []struct {
			name     string
			priority bool
			ahead    time.Duration
		}{{"priority", true, 0}, {"due", false, 0}, {"due-ahead", false, 3 * time.Second}} {
			for _, withFirst := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/member-put-first=%v", tc.name, withFirst), func(t *testing.T) {
					f := newFixture(t, b)
					now := nowMs()
					zs := make([]redis.Z, count)
					for i := range zs {
						score := float64(17 + i%7) // runs of equal priority
						if !tc.priority {
							score = now - 60_000 + float64(i) // due, oldest first
							if tc.ahead > 0 && i >= count/2 {
								score = now + 500 + float64(5*i) // due within the lookahead
							}
						}
						zs[i] = redis.Z{Score: score, Member: fmt.Sprintf("m%04d-%s", (i*7919)%count, strings.Repeat("x", 40))}
					}
					if withFirst {
						zs[count/3].Member = skiplistFirst
					}
					require.NoError(t, b.Redis.ZAdd(f.ctx, f.keys.Store, zs...).Err())

					res := f.cycle(CycleRequest{Priority: tc.priority, Max: count, Ahead: tc.ahead})
					require.Equal(t, count, len(res.Deliveries), "deliveries")
					require.Equal(t, int64(count), f.card(f.keys.Prepare), "prepare holds exactly the popped entries")
					for i, d := range res.Deliveries {
						s, ok := f.score(f.keys.Prepare, string(d.Member))
						require.True(t, ok, "delivery %d is not in prepare", i)
						assert.Equal(t, float64(d.prepare), s, "delivery %d", i)
					}
					_, ok := f.score(f.keys.Prepare, skiplistFirst)
					assert.Equal(t, withFirst, ok, "the member put first is in prepare only as a message")
					assert.Zero(t, f.card(f.keys.Store))
					if !tc.priority {
						for i := 1; i < count; i++ {
							require.LessOrEqual(t, res.Deliveries[i-1].DueMs, res.Deliveries[i].DueMs, "due order")
						}
					}

					f.cycle(CycleRequest{Priority: tc.priority, Outcomes: settle(res, Commit)})
					assert.Zero(t, f.card(f.keys.Prepare), "the commit removes them all")
				})
			}
		}
	})
}
