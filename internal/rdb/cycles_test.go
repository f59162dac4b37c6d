package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// slotCycles returns one call per slot of keys, popping max with the
// fixture's defaults.
func slotCycles(keys []SlotKeys, max int, fence Fence) []*SlotCycle {
	calls := make([]*SlotCycle, len(keys))
	for i, k := range keys {
		calls[i] = &SlotCycle{Keys: k, Req: &CycleRequest{Priority: true, Max: max, Timeout: 30 * time.Second,
			Waits: noWaits, Fence: fence}}
	}
	return calls
}

// Cycles runs each slot's call as Cycle would, in one go: every slot pops its
// own messages, a fenced call is refused without holding back the others,
// and the commits of a second batch settle each slot.
func TestCyclesRunsEachSlotsCall(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		ks := NewKeyspace(testenv.Namespace(t, b))
		keys := ks.Slots("topic", 3)
		want := [][]string{{"a1", "a2"}, {"b1"}, {"c1", "c2"}}
		for i, ms := range want {
			for j, m := range ms {
				f.zadd(keys[i].Store, float64(90-j), m)
			}
			require.NoError(t, b.Redis.Set(f.ctx, keys[i].Owner, "7:w", 0).Err())
		}
		require.NoError(t, b.Redis.Set(f.ctx, keys[2].Owner, "8:other", 0).Err())

		calls := slotCycles(keys, 5, RecordFence("7:w"))
		f.br.Cycles(f.ctx, calls)
		for i, c := range calls[:2] {
			require.NoError(t, c.Err)
			assert.False(t, c.Res.Refused)
			assert.Equal(t, want[i], members(c.Res.Deliveries), "slot %d", i)
			assert.Equal(t, int64(len(want[i])), f.card(keys[i].Prepare))
		}
		require.NoError(t, calls[2].Err)
		assert.True(t, calls[2].Res.Refused)
		assert.Equal(t, "8:other", calls[2].Res.Owner)
		assert.Equal(t, int64(2), f.card(keys[2].Store), "a refused call takes nothing")

		settleCalls := slotCycles(keys[:2], 0, RecordFence("7:w"))
		for i, c := range settleCalls {
			c.Req.Outcomes = settle(calls[i].Res, Commit)
		}
		f.br.Cycles(f.ctx, settleCalls)
		for i, c := range settleCalls {
			require.NoError(t, c.Err)
			assert.Zero(t, f.card(keys[i].Prepare), "slot %d settled", i)
			assert.Zero(t, f.card(keys[i].Store), "slot %d drained", i)
		}
	})
}

// A server that lost the script (restart, failover) answers NOSCRIPT; those
// calls never ran, and go again with the script.
func TestCyclesAfterTheServerLostTheScript(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		keys := NewKeyspace(testenv.Namespace(t, b)).Slots("topic", 2)
		for i, k := range keys {
			f.zadd(k.Store, 50, "m"+string(rune('0'+i)))
		}
		require.NoError(t, b.Redis.ScriptFlush(f.ctx).Err())
		calls := slotCycles(keys, 5, Fence{})
		f.br.Cycles(f.ctx, calls)
		for i, c := range calls {
			require.NoError(t, c.Err)
			assert.Equal(t, []string{"m" + string(rune('0'+i))}, members(c.Res.Deliveries))
		}
	})
}

// A failing server fails every call of the batch, and changes nothing.
func TestCyclesReturnEachCallsError(t *testing.T) {
	r := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer r.Close()
	br := New(r, NewKeyspace("down"))
	calls := slotCycles(NewKeyspace("down").Slots("topic", 3), 5, Fence{})
	br.Cycles(context.Background(), calls)
	for _, c := range calls {
		assert.Error(t, c.Err)
		assert.Empty(t, c.Res.Deliveries)
	}
}
