package zookeeper_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// holds reports whether h holds a valid lease on every slot of slots.
func (h *holder) holds(slots []int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range slots {
		if l := h.held[s]; l == nil || !l.Valid() {
			return false
		}
	}
	return true
}

// A worker declining four slots hands them to the other worker once the
// decline has stood two seconds, takes four of the other's in their place,
// and the admin read shows its declines; a slot both decline stays put;
// withdrawn declines leave the shares as they are.
func TestZooKeeperMovesDeclinedSlots(t *testing.T) {
	t.Parallel()
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("declines-%d", time.Now().UnixNano())
	shared := &sharedSlots{holders: map[int]int{}}
	da, db := coordinator.NewDeclines(), coordinator.NewDeclines()
	a := startWorkerWith(t, servers, ns, "a", 1, 16, shared, da)
	b := startWorkerWith(t, servers, ns, "b", 1, 16, shared, db)
	waitFor(t, 10*time.Second, "a and b hold 8 each", func() bool { return a.h.valid() == 8 && b.h.valid() == 8 })
	var mine []int // four of a's slots
	a.h.mu.Lock()
	for s := range 16 {
		if a.h.held[s] != nil && len(mine) < 4 {
			mine = append(mine, s)
		}
	}
	a.h.mu.Unlock()
	require.Len(t, mine, 4)

	da.Set("t", mine)
	took := waitFor(t, 10*time.Second, "b holds the slots a declines, each keeps its share", func() bool {
		return b.h.holds(mine) && a.h.valid() == 8 && b.h.valid() == 8
	})
	t.Logf("declined slots served by the other worker %v after the decline", took)
	assert.GreaterOrEqual(t, took, 2*time.Second, "a decline honoured before its grace")
	assert.Less(t, took, 5*time.Second, "declined slots moved no sooner than a drain timeout")

	z, err := zookeeper.New(zookeeper.Config{Servers: servers, SessionTimeout: 4 * time.Second, Root: "/rmq-test"})
	require.NoError(t, err)
	defer z.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, err := z.Workers(ctx, ns)
	require.NoError(t, err)
	require.Len(t, ws, 2)
	got := map[string][]int{}
	for _, w := range ws {
		got[w.ID] = w.Declined["t"]
	}
	assert.Equal(t, mine, got["a"], "the admin read shows a's declines")
	assert.Empty(t, got["b"])

	// Both decline one slot: it stays where it is.
	db.Set("t", mine[:1])
	time.Sleep(3 * time.Second)
	assert.True(t, b.h.holds(mine[:1]), "a slot both workers decline moved")

	da.Set("t", nil)
	db.Set("t", nil)
	waitFor(t, 5*time.Second, "the declines withdrawn", func() bool {
		ws, err := z.Workers(ctx, ns)
		require.NoError(t, err)
		return slices.IndexFunc(ws, func(w zookeeper.WorkerInfo) bool { return len(w.Declined) > 0 }) < 0
	})
	time.Sleep(time.Second)
	assert.Equal(t, 8, a.h.valid())
	assert.Equal(t, 8, b.h.valid())
	assert.True(t, b.h.holds(mine), "withdrawn declines moved slots back")
	assert.Equal(t, 1, shared.worstSeen(), "a slot had two holders at once")
}
