package rdb

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A retry's wait starts when Redis hears of the failure and is never cut
// short by the millisecond scores: the retry's due millisecond is at least
// the rollback's time, to the microsecond, plus the wait. Redis's clock is
// read just before each rollback, usually within the same millisecond.
func TestRollbackWaitIsNeverShortened(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		const wait = 200 * time.Millisecond
		for i := range 20 {
			m := fmt.Sprint("m", i)
			f.zadd(f.keys.Store, 40, m)
			res := f.cycle(CycleRequest{Priority: true, Max: 1})
			require.Equal(t, []string{m}, members(res.Deliveries))
			if b.Mini != nil {
				b.Mini.SetTime(time.UnixMicro(time.Now().UnixMilli()*1000 + 600)) // mid-millisecond
			}
			before, err := b.Redis.Time(f.ctx).Result()
			require.NoError(t, err)
			f.cycle(CycleRequest{Priority: true, Waits: firstWaits(wait), Outcomes: settle(res, Rollback)})
			s, ok := f.score(f.keys.Retry, m)
			require.True(t, ok)
			due := int64(s) / 32 // ms
			assert.GreaterOrEqual(t, due*1000, before.UnixMicro()+wait.Microseconds(),
				"round %d: retry due at %d ms, Redis's clock read %d µs before the rollback", i, due, before.UnixMicro())
		}
	})
}
