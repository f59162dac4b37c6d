package coordinator

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A worker cut off from one Cluster master (not the coordinator's) goes on
// handing over and taking the slots of the other masters: a release or a
// claim that includes a record on the cut master waits for it at most
// half a second, not the client's read timeout, and does not keep the
// records on the other masters from being written. Neither worker declines
// anything here, so this is the window before a decline (or with no other
// worker to take the slots).
func TestRedisCoordinatorCutFromOneMasterServesTheOthers(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ns := testenv.Namespace(t, b)
	keys := rdb.NewKeyspace(ns)
	masterOf := func(key string) string { return testenv.MasterOf(t, direct, key) }
	coordMaster := masterOf(keys.Members())
	owners := keys.OwnerKeys(testTopic, 16)
	onCut := map[int]bool{}
	cutAddr := ""
	for s, k := range owners {
		if m := masterOf(k); m != coordMaster && (cutAddr == "" || m == cutAddr) {
			cutAddr, onCut[s] = m, true
		}
	}
	require.NotEmpty(t, cutAddr, "every slot on the coordinator's master")
	require.Less(t, len(onCut), 16, "every slot on one master")
	p := testenv.StartPartition(t, cutAddr)
	via := testenv.ClusterVia(t, map[string]string{cutAddr: p.Addr()})

	board := newSlotBoard()
	startOn := func(name string, r redis.UniversalClient) *testWorker {
		co := &flakyCoordination{Coordination: rdb.NewCoordination(r, keys)}
		m := Member{Namespace: ns, DrainTimeout: 5 * time.Second,
			Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 16, Threads: 1}}}
		run := newRedisRun(co, RedisConfig{LeaseTTL: 2 * time.Second, WorkerID: name}, testLog(), m,
			&testThreads{worker: name, board: board, drain: 5 * time.Millisecond})
		runCtx, cancel := context.WithCancel(context.Background())
		w := &testWorker{name: name, co: co, stop: cancel, done: make(chan error, 1)}
		go func() { w.done <- run.run(runCtx) }()
		t.Cleanup(func() { stopWorker(t, w) })
		return w
	}
	holdsOff := func(w string) (n int) { // slots w holds off the cut master
		board.mu.Lock()
		defer board.mu.Unlock()
		for s, ws := range board.holders {
			if l := ws[w]; l != nil && l.Valid() && !onCut[s] {
				n++
			}
		}
		return n
	}
	others := 16 - len(onCut)

	startOn("a", via.Redis)
	waitFor(t, board, 10*time.Second, "a holds every slot", func() bool { return board.count("a") == 16 })
	p.Cut()

	// a hands slots over: its releases include records on the cut master.
	bStarted := time.Now()
	bw := startOn("b", b.Redis)
	took := waitFor(t, board, 15*time.Second, "b holds its share off the cut master", func() bool {
		return holdsOff("b") > 0 && holdsOff("a")+holdsOff("b") == others
	})
	t.Logf("b served its share off the cut master %v after it started", took.Round(time.Millisecond))
	handedOver := took

	// a takes slots over: its claims include records on the cut master.
	waitFor(t, board, 15*time.Second, "b holds 8 slots", func() bool { return board.count("b") == 8 })
	whole := time.Since(bStarted)
	t.Logf("b served its whole share %v after it started", whole.Round(time.Millisecond))
	left := time.Now()
	bw.stop()
	took = waitFor(t, board, 20*time.Second, "a holds every slot off the cut master", func() bool { return holdsOff("a") == others })
	t.Logf("a served every slot off the cut master %v after b began to leave", time.Since(left).Round(time.Millisecond))
	assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
	// A record on the cut master waits for the client's read timeout (3 s
	// by default) when the call is not bounded.
	assert.Less(t, handedOver, 2500*time.Millisecond, "a's releases waited for the cut master")
	assert.Less(t, took, 2500*time.Millisecond, "a's claims waited for the cut master")
	// b claims a record on the cut master once a lists it as given up; its
	// patience (drain timeout 5 s + TTL 2 s + a heartbeat) would be 7.4 s.
	assert.Less(t, whole, 5*time.Second, "b waited out its patience for the cut master's slots")

	p.Heal()
	waitFor(t, board, 20*time.Second, "a holds every slot once healed", func() bool { return board.count("a") == 16 })
}

// stopWorker ends w's Run and waits for it.
func stopWorker(t *testing.T, w *testWorker) {
	w.stop()
	select {
	case <-w.done:
	case <-time.After(10 * time.Second):
		t.Errorf("worker %s did not stop", w.name)
	}
}

// testLog is the coordinators' logger in tests: RMQ_DEBUG_LOG=1 prints it.
func testLog() *slog.Logger {
	if os.Getenv("RMQ_DEBUG_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}
