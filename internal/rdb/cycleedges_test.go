package rdb

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// edgeFixture is a fixture on the standalone server, in a namespace of its
// own (deleted at the end).
func edgeFixture(t *testing.T) *fixture {
	return newFixture(t, testenv.Single(t))
}

// Priority 17 (the lowest valid priority) and retries: 1 + 16 deliveries,
// then dead; every rollback is applied.
func TestCycleEdgePriority17RetriesThenDead(t *testing.T) {
	f := edgeFixture(t)
	f.zadd(f.keys.Store, 17, "m")
	var lefts []int
	for i := 0; i < 20; i++ {
		res := f.cycle(CycleRequest{Priority: true, Max: 5})
		if len(res.Deliveries) == 0 {
			break
		}
		require.Len(t, res.Deliveries, 1)
		d := res.Deliveries[0]
		lefts = append(lefts, d.RetriesLeft)
		if i == 0 {
			assert.Equal(t, int64(17), d.Priority)
		}
		s, ok := f.score(f.keys.Prepare, "m")
		require.True(t, ok)
		require.Equal(t, float64(d.prepare), s)
		f.cycle(CycleRequest{Priority: true, Max: 0, Outcomes: []Outcome{d.Settle(Rollback)}})
	}
	assert.Equal(t, []int{16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0}, lefts)
	_, dead := f.score(f.keys.Dead, "m")
	assert.True(t, dead)
	assert.Zero(t, f.card(f.keys.Prepare))
	assert.Zero(t, f.card(f.keys.Store))
}

// Empty and binary members, in both outcome forms.
func TestCycleEdgeEmptyAndBinaryMembers(t *testing.T) {
	f := edgeFixture(t)
	now := nowMs()
	ms := []string{"", "\x00", "\x00\xff", "\xff", "a\x00b"}
	for i, m := range ms {
		f.zadd(f.keys.Store, now-100+float64(i), m)
	}
	res := f.cycle(CycleRequest{Max: 10})
	require.ElementsMatch(t, ms, members(res.Deliveries))
	// commit all in the one-pop form
	f.cycle(CycleRequest{Max: 0, Outcomes: settle(res, Commit)})
	assert.Zero(t, f.card(f.keys.Prepare))
	// again with mixed outcomes
	for i, m := range ms {
		f.zadd(f.keys.Store, now-100+float64(i), m)
	}
	res = f.cycle(CycleRequest{Max: 10})
	require.Len(t, res.Deliveries, len(ms))
	outs := settle(res, Commit)
	outs[0] = res.Deliveries[0].Settle(Rollback)
	outs[1] = res.Deliveries[1].Settle(Restore)
	f.cycle(CycleRequest{Max: 0, Outcomes: outs})
	assert.Zero(t, f.card(f.keys.Prepare))
	assert.Equal(t, int64(2), f.card(f.keys.Store))
}

// Priorities near 2^53 in a pop large enough for the run form.
func TestCycleEdgePriorityNear2p53Runs(t *testing.T) {
	f := edgeFixture(t)
	const top = 1<<53 - 1
	var want []string
	for i := 0; i < 40; i++ {
		p := float64(top)
		if i >= 20 {
			p = float64(top - 1)
		}
		m := fmt.Sprintf("m%02d", i)
		f.zadd(f.keys.Store, p, m)
		want = append(want, m)
	}
	res := f.cycle(CycleRequest{Priority: true, Max: 40})
	require.Len(t, res.Deliveries, 40)
	for i, d := range res.Deliveries {
		wantP := int64(top)
		if i >= 20 {
			wantP = top - 1
		}
		assert.Equal(t, wantP, d.Priority, "%d %s", i, d.Member)
		s, ok := f.score(f.keys.Prepare, string(d.Member))
		require.True(t, ok)
		assert.Equal(t, float64(d.prepare), s)
	}
	got := members(res.Deliveries)
	sort.Strings(got)
	assert.Equal(t, want, got)
	f.cycle(CycleRequest{Priority: true, Max: 0, Outcomes: settle(res, Commit)})
	assert.Zero(t, f.card(f.keys.Prepare))
}

// A message popped ahead, restored, and popped ahead again commits cleanly.
func TestCycleEdgeAheadRestoreRepop(t *testing.T) {
	f := edgeFixture(t)
	now := nowMs()
	f.zadd(f.keys.Store, now+3000, "m")
	res := f.cycle(CycleRequest{Max: 5, Ahead: 5 * time.Second})
	require.Len(t, res.Deliveries, 1)
	res2 := f.cycle(CycleRequest{Max: 5, Ahead: 5 * time.Second, Outcomes: []Outcome{res.Deliveries[0].Settle(Restore)}})
	require.Len(t, res2.Deliveries, 1)
	f.cycle(CycleRequest{Max: 0, Outcomes: settle(res2, Commit)})
	assert.Zero(t, f.card(f.keys.Prepare))
	assert.Zero(t, f.card(f.keys.Store))
	_ = time.Second
}
