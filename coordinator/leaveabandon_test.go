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

// A worker that stops with listeners that do not finish, and whose client
// then abandons them (Member.Abandoned: a Shutdown whose ctx ended), still
// writes its records back and leaves the group at once: the leave's calls
// are not cut by the abandonment (each has its own bound), so the other
// worker holds every slot within a second and one member is left.
func TestAbandonDuringTheLeaveTellsTheGroup(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	board := newSlotBoard()
	ttl := 5 * time.Second

	co := rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns))
	abandoned := make(chan struct{})
	m := Member{Namespace: ns, DrainTimeout: 30 * time.Second, Abandoned: abandoned,
		Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 16, Threads: 1}}}
	ha := &testThreads{worker: "a", board: board, drain: 5 * time.Millisecond}
	run := newRedisRun(co, RedisConfig{LeaseTTL: ttl, WorkerID: "a"}, testLog(), m, ha)
	stop, done := goRun(t, run, "a")
	waitFor(t, board, 5*time.Second, "a holds every slot", func() bool { return board.count("a") == 16 })
	startWorkerWith(t, b, ns, "b", board, 16, 1, ttl, 30*time.Second)
	waitFor(t, board, 5*time.Second, "shared", func() bool { return board.count("a") == 8 && board.count("b") == 8 })

	ha.linger.Store(true) // a's listeners in hand do not finish while a owns the slot
	stop()
	time.Sleep(300 * time.Millisecond)
	close(abandoned)
	at := time.Now()
	select {
	case err := <-done:
		require.NoError(t, err)
		done <- nil
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return promptly after the abandonment")
	}
	t.Logf("Run returned %v after the abandonment", time.Since(at).Round(time.Millisecond))
	for time.Since(at) < 2500*time.Millisecond && board.count("b") < 16 {
		board.check()
		time.Sleep(5 * time.Millisecond)
	}
	members, err := RedisMembers(context.Background(), b.Redis, ns)
	require.NoError(t, err)
	t.Logf("%v after the abandonment: b holds %d slots; %d members", time.Since(at).Round(time.Millisecond), board.count("b"), len(members))
	assert.Len(t, members, 1, "the abandoned worker did not leave the group: its leave ran on a cancelled context")
	if board.count("b") < 16 {
		t.Errorf("the abandoned worker's slots did not move within 2.5 s (their records were not written back either)")
	}
	assert.Zero(t, board.overlap.Load())
}
