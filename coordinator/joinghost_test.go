package coordinator

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// lostJoin passes the first Join through to Redis and then reports its
// reply lost (a connection that broke with the join in flight); later
// joins hang until their ctx ends (the link still down). Every other call
// goes through.
type lostJoin struct {
	rdb.Coordination
	joins atomic.Int32
}

func (c *lostJoin) Join(ctx context.Context, id string, ttl time.Duration, info string, update bool) (int64, error) {
	if update {
		return c.Coordination.Join(ctx, id, ttl, info, update)
	}
	if c.joins.Add(1) == 1 {
		if _, err := c.Coordination.Join(ctx, id, ttl, info, update); err != nil {
			return 0, err
		}
		return 0, errors.New("test: connection reset with the join in flight")
	}
	<-ctx.Done()
	return 0, ctx.Err()
}

// A worker's join reaches Redis but its reply is lost; the worker stops
// while it tries the join again. Its leave ends the member the lost join may
// have made (joinTried), so the leader does not keep assigning a ghost slots
// that nobody serves until it expires.
func TestJoinWithALostReplyLeavesNoMemberWhenRunStops(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	board := newSlotBoard()
	ttl := 5 * time.Second
	startWorkerWith(t, b, ns, "b", board, 16, 1, ttl, 2*time.Second) // the leader
	waitFor(t, board, 5*time.Second, "b holds every slot", func() bool { return board.count("b") == 16 })

	co := &lostJoin{Coordination: rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns))}
	m := Member{Namespace: ns, DrainTimeout: 2 * time.Second,
		Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 16, Threads: 1}}}
	run := newRedisRun(co, RedisConfig{LeaseTTL: ttl, WorkerID: "ghost"}, testLog(), m,
		&testThreads{worker: "ghost", board: board, drain: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run.run(ctx) }()
	waitFor(t, board, 5*time.Second, "b hands half its slots to the member the join made", func() bool { return board.count("b") == 8 })
	waitFor(t, board, 5*time.Second, "the join is tried again", func() bool { return co.joins.Load() >= 2 })

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
	}
	stopped := time.Now()
	for time.Since(stopped) < 2*time.Second && board.count("b") < 16 {
		time.Sleep(10 * time.Millisecond)
	}
	members, err := RedisMembers(context.Background(), b.Redis, ns)
	require.NoError(t, err)
	var ids []string
	for _, mb := range members {
		ids = append(ids, mb.ID)
	}
	t.Logf("2 s after the stopped worker's Run returned: b holds %d slots; members %v", board.count("b"), ids)
	assert.Len(t, members, 1, "the stopped worker's membership stays behind")
	assert.Equal(t, 16, board.count("b"), "the slots assigned to the stopped worker's ghost membership are served by nobody")
}
