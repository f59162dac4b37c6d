package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// startWorkerWith is startWorker with the worker's own drain (consume)
// timeout and lease TTL, as two processes configured differently have.
func startWorkerWith(t *testing.T, b testenv.Backend, ns, name string, board *slotBoard, slots, threads int,
	ttl, drain time.Duration) (*testWorker, *testThreads) {
	t.Helper()
	co := &flakyCoordination{Coordination: rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns))}
	m := Member{Namespace: ns, DrainTimeout: drain,
		Topics: []TopicThreads{{Topic: testTopic, SlotAmount: slots, Threads: threads}}}
	h := &testThreads{worker: name, board: board, drain: 5 * time.Millisecond}
	run := newRedisRun(co, RedisConfig{LeaseTTL: ttl, WorkerID: name}, testLog(), m, h)
	w := &testWorker{name: name, co: co}
	w.stop, w.done = goRun(t, run, name)
	return w, h
}

// Two workers whose drain (consume) timeouts differ (WithConsumeTimeout is
// per client: a rolling deploy that changes it): A holds every slot with a
// 20 s drain timeout and listeners in hand; B, with 1 s, joins. A's leases
// of the slots it must hand over stay valid until A's drain deadline, so B
// waits for A's patience, not its own (drain 1 s + TTL + a heartbeat),
// before it claims over A's live records: never two valid leases of a slot.
func TestClaimWaitsOutTheHolderDrainTimeout(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	board := newSlotBoard()
	ttl := time.Second
	_, ha := startWorkerWith(t, b, ns, "a", board, 16, 1, ttl, 20*time.Second)
	waitFor(t, board, 5*time.Second, "a holds every slot", func() bool { return board.count("a") == 16 })
	ha.linger.Store(true) // a's listeners in hand run on while a still owns the slot

	start := time.Now()
	startWorkerWith(t, b, ns, "b", board, 16, 1, ttl, time.Second)
	for time.Since(start) < 3500*time.Millisecond && board.overlap.Load() == 0 {
		board.check()
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("after %v: a holds %d valid leases, b %d", time.Since(start).Round(time.Millisecond), board.count("a"), board.count("b"))
	assert.Zero(t, board.overlap.Load(), "two valid leases of one slot: b claimed over a live holder "+
		"whose drain deadline (its own consume timeout) had not passed")
	ha.linger.Store(false)
}
