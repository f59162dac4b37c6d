package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A leaving leader reassigns its slots and gives the leader lease up, rather
// than holding it through its drain: a worker that joins while the leader's
// listeners finish is assigned slots by the next leader at once, not once the
// old leader's membership ends.
func TestRedisLeavingLeaderGivesTheLeadUpBeforeItsDrain(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		keys := rdb.NewKeyspace(ns)
		// The old leader's revoked leases lapse about a TTL after its leave
		// (its loop, draining, no longer applies assignments): that long
		// TTL keeps it a member well past the new one's first assignment.
		const ttl, drain = 6 * time.Second, 10 * time.Second
		board := newSlotBoard()
		ha := &testThreads{worker: "a", board: board}
		m := Member{Namespace: ns, DrainTimeout: drain, Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 16, Threads: 1}}}
		runA := newRedisRun(rdb.NewCoordination(b.Redis, keys), RedisConfig{LeaseTTL: ttl, WorkerID: "a"}, testLog(), m, ha)
		stopA, doneA := goRun(t, runA, "a")
		aid := joinedID(t, runA)
		waitFor(t, board, 5*time.Second, "a holds every slot", func() bool { return board.count("a") == 16 })
		leader, err := b.Redis.Get(context.Background(), keys.Leader()).Result()
		require.NoError(t, err)
		require.Equal(t, aid, leader, "a leads")

		startHandoverRun(t, rdb.NewCoordination(b.Redis, keys), ns, "b", 16, &testThreads{worker: "b", board: board}, ttl, drain)
		waitFor(t, board, 5*time.Second, "a and b hold half each", func() bool { return board.count("a") == 8 && board.count("b") == 8 })

		ha.linger.Store(true) // a's listeners run on until its leases are taken away
		stopA()               // a leaves: its 8 slots go to b once its listeners are done (the drain timeout)
		time.Sleep(300 * time.Millisecond)
		startHandoverRun(t, rdb.NewCoordination(b.Redis, keys), ns, "c", 16, &testThreads{worker: "c", board: board}, ttl, drain)
		joined := time.Now()
		took := waitFor(t, board, 2*time.Second, "c holds slots while a still drains", func() bool { return board.count("c") > 0 })
		t.Logf("c held a slot %v after joining", took)
		select {
		case err := <-doneA:
			t.Fatalf("a left before c was served (%v): the test proves nothing", err)
		default:
		}
		require.NoError(t, <-doneA)
		t.Logf("a left %v after c joined", time.Since(joined).Round(time.Millisecond))
		doneA <- nil // for the cleanup
		waitFor(t, board, 5*time.Second, "b and c hold every slot", func() bool { return board.count("b")+board.count("c") == 16 })
		assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
	})
}
