package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// slotBoard is what every test worker's handler reports to: the leases each
// worker holds now, and every moment two valid leases of one slot existed.
type slotBoard struct {
	mu      sync.Mutex
	holders map[int]map[string]*Lease // slot → worker → lease
	overlap atomic.Int64
}

func newSlotBoard() *slotBoard { return &slotBoard{holders: make(map[int]map[string]*Lease)} }

// count returns how many slots worker holds with a valid lease.
func (b *slotBoard) count(worker string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, ws := range b.holders {
		if l := ws[worker]; l != nil && l.Valid() {
			n++
		}
	}
	return n
}

// check records an overlap if two valid leases of one slot exist now.
func (b *slotBoard) check() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ws := range b.holders {
		valid := 0
		for _, l := range ws {
			if l.Valid() {
				valid++
			}
		}
		if valid > 1 {
			b.overlap.Add(1)
		}
	}
}

// testThreads is a Handler standing in for a worker's consumer threads: it
// takes leases, and releases a revoked one after a short drain; while linger
// is set, a revoked lease's listener runs on until the coordinator takes the
// lease away (Valid turns false).
type testThreads struct {
	worker  string
	board   *slotBoard
	drain   time.Duration
	noCheck bool // do not look for overlaps at every assignment (O(slots) each)
	linger  atomic.Bool
}

func (h *testThreads) Assigned(l *Lease) {
	h.board.mu.Lock()
	if h.board.holders[l.Slot()] == nil {
		h.board.holders[l.Slot()] = make(map[string]*Lease)
	}
	h.board.holders[l.Slot()][h.worker] = l
	h.board.mu.Unlock()
	if !h.noCheck {
		h.board.check()
	}
	go func() {
		<-l.Revoking()
		for h.linger.Load() && l.Valid() {
			time.Sleep(2 * time.Millisecond)
		}
		time.Sleep(h.drain)
		h.board.mu.Lock()
		if h.board.holders[l.Slot()][h.worker] == l {
			delete(h.board.holders[l.Slot()], h.worker)
		}
		h.board.mu.Unlock()
		l.Release()
	}()
}

func (h *testThreads) Revoked(*Lease) {}

// flakyCoordination fails every call while cut, as a network partition
// between one worker and Redis would.
type flakyCoordination struct {
	rdb.Coordination
	cut atomic.Bool
	// stale fails reading the assignments alone, so the worker keeps its
	// membership but cannot learn that its slots move.
	stale atomic.Bool
}

func (f *flakyCoordination) Assignments(ctx context.Context, topics []string) ([]string, error) {
	if f.cut.Load() || f.stale.Load() {
		return nil, errCut
	}
	return f.Coordination.Assignments(ctx, topics)
}

var errCut = errors.New("test: cut off from redis")

func (f *flakyCoordination) Heartbeat(ctx context.Context, id string, ttl time.Duration, lead bool) (rdb.Beat, error) {
	if f.cut.Load() {
		return rdb.Beat{}, errCut
	}
	return f.Coordination.Heartbeat(ctx, id, ttl, lead)
}

func (f *flakyCoordination) Join(ctx context.Context, id string, ttl time.Duration, info string, update bool) (int64, error) {
	if f.cut.Load() {
		return 0, errCut
	}
	return f.Coordination.Join(ctx, id, ttl, info, update)
}

func (f *flakyCoordination) Claim(ctx context.Context, id string, slots []string, expected []string) ([]string, error) {
	if f.cut.Load() {
		return nil, errCut
	}
	return f.Coordination.Claim(ctx, id, slots, expected)
}

func (f *flakyCoordination) Leave(ctx context.Context, id string) error {
	if f.cut.Load() {
		return errCut
	}
	return f.Coordination.Leave(ctx, id)
}

// testWorker is one Run of the Redis coordinator in this process.
type testWorker struct {
	name string
	co   *flakyCoordination
	stop context.CancelFunc
	done chan error
}

const testTopic = "t"

func startWorker(t *testing.T, b testenv.Backend, ns, name string, board *slotBoard, threads int, ttl time.Duration) *testWorker {
	t.Helper()
	return startDecliningWorker(t, b, ns, name, board, threads, ttl, nil)
}

// startDecliningWorker is startWorker with the worker's declines.
func startDecliningWorker(t *testing.T, b testenv.Backend, ns, name string, board *slotBoard, threads int, ttl time.Duration,
	declines *Declines) *testWorker {
	t.Helper()
	co := &flakyCoordination{Coordination: rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns))}
	m := Member{Namespace: ns, DrainTimeout: 5 * time.Second, Declines: declines,
		Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 16, Threads: threads}}}
	run := newRedisRun(co, RedisConfig{LeaseTTL: ttl, WorkerID: name}, testLog(), m,
		&testThreads{worker: name, board: board, drain: 5 * time.Millisecond})
	w := &testWorker{name: name, co: co}
	w.stop, w.done = goRun(t, run, name)
	return w
}

// goRun runs run until t ends or stop is called, and returns stop and the
// channel its outcome comes on (a test that reads it puts it back); t's
// cleanup waits up to 10 s for the Run to end.
func goRun(t *testing.T, run *redisRun, label string) (stop context.CancelFunc, done chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- run.run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("worker %s did not stop", label)
		}
	})
	return cancel, done
}

// testLog is the coordinators' logger in tests: RMQ_DEBUG_LOG=1 prints it.
func testLog() *slog.Logger {
	if os.Getenv("RMQ_DEBUG_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// waitFor polls cond (checking the board for overlaps meanwhile) and
// returns how long it took.
func waitFor(t *testing.T, board *slotBoard, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		board.check()
		if time.Since(start) > within {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Since(start)
}

func TestRedisCoordinatorSharesSlotsAndHandsThemOver(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		board := newSlotBoard()
		startWorker(t, b, ns, "a", board, 2, 2*time.Second)
		took := waitFor(t, board, 5*time.Second, "a holds every slot", func() bool { return board.count("a") == 16 })
		t.Logf("first worker holds every slot after %v", took)

		w := startWorker(t, b, ns, "b", board, 2, 2*time.Second)
		took = waitFor(t, board, 3*time.Second, "a and b hold half each", func() bool {
			return board.count("a") == 8 && board.count("b") == 8
		})
		t.Logf("join: slots shared after %v", took)

		w.stop()
		took = waitFor(t, board, 3*time.Second, "a holds every slot again", func() bool { return board.count("a") == 16 })
		t.Logf("graceful leave: every slot served again after %v", took)
		require.NoError(t, <-w.done)
		w.done <- nil // for the cleanup
		assert.Less(t, took, time.Second, "graceful handover bound")
		assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
	})
}

func TestRedisCoordinatorTakesOverFromAWorkerCutOff(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		board := newSlotBoard()
		ttl := 1500 * time.Millisecond
		a := startWorker(t, b, ns, "a", board, 1, ttl)
		startWorker(t, b, ns, "b", board, 1, ttl)
		waitFor(t, board, 5*time.Second, "shared", func() bool { return board.count("a") == 8 && board.count("b") == 8 })

		cut := time.Now()
		a.co.cut.Store(true)
		lapsed := waitFor(t, board, 2*ttl, "a's leases lapse", func() bool { return board.count("a") == 0 })
		took := waitFor(t, board, 2*ttl, "b holds every slot", func() bool { return board.count("b") == 16 })
		t.Logf("cut off: a's leases lapsed after %v, b served every slot %v after the cut", lapsed, time.Since(cut))
		assert.Less(t, lapsed, ttl, "a stops before its membership could expire")
		assert.Less(t, time.Since(cut), ttl+time.Second, "takeover bound: LeaseTTL + 1s")
		_ = took

		// a comes back: its membership expired, so it joins again under a new
		// id and gets its share back.
		a.co.cut.Store(false)
		waitFor(t, board, 5*time.Second, "a rejoined and shares again", func() bool {
			return board.count("a") == 8 && board.count("b") == 8
		})
		assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
	})
}

// TestRedisCoordinatorWorkerThatCannotApplyTheAssignmentLetsItsLeasesLapse:
// a worker whose heartbeats go through but which cannot read the new
// assignment keeps no lease past its TTL, so the slots' new owner, which
// takes them once its patience runs out, never serves one beside it.
func TestRedisCoordinatorWorkerThatCannotApplyTheAssignmentLetsItsLeasesLapse(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		board := newSlotBoard()
		ttl := 1500 * time.Millisecond
		startWorker(t, b, ns, "a", board, 1, ttl) // joins first: the leader
		waitFor(t, board, 5*time.Second, "a holds every slot", func() bool { return board.count("a") == 16 })
		w := startWorker(t, b, ns, "b", board, 1, ttl)
		waitFor(t, board, 5*time.Second, "a and b share", func() bool { return board.count("a") == 8 && board.count("b") == 8 })

		w.co.stale.Store(true)
		start := time.Now()
		startWorker(t, b, ns, "c", board, 1, ttl)
		waitFor(t, board, 2*ttl, "b's leases lapse", func() bool { return board.count("b") == 0 })
		lapsed := time.Since(start)
		// c takes slots from b only after its patience (drain timeout + TTL
		// + a heartbeat interval): b stays a member all along.
		waitFor(t, board, 5*time.Second+3*ttl, "c serves its share", func() bool { return board.count("c") >= 16/3 })
		t.Logf("b's leases lapsed %v after c joined; c served its share after %v", lapsed, time.Since(start))
		assert.Less(t, lapsed, ttl+time.Second)
		assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")

		w.co.stale.Store(false)
		waitFor(t, board, 5*time.Second, "b applies the assignment and serves its share again", func() bool {
			return board.count("b") > 0 && board.count("a")+board.count("b")+board.count("c") == 16
		})
		assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
	})
}

func TestAssignmentEncodingRoundTrips(t *testing.T) {
	owners := []Owner{{Worker: "x", Thread: 1}, {}, {Worker: "y", Thread: 0}, {Worker: "x", Thread: 0}}
	got, err := decodeAssignment(encodeAssignment(owners))
	require.NoError(t, err)
	assert.Equal(t, owners, got)
	none, err := decodeAssignment("")
	require.NoError(t, err)
	assert.Nil(t, none)
	_, err = decodeAssignment("{")
	assert.Error(t, err)
}

func TestRedisConfigIsChecked(t *testing.T) {
	b := testenv.Mini(t)
	for _, cfg := range []RedisConfig{{LeaseTTL: time.Millisecond}, {LeaseTTL: time.Hour}, {WorkerID: "a:b"}} {
		err := NewRedis(b.Redis, cfg).Check()
		assert.ErrorIs(t, err, ErrInvalidRedisConfig, fmt.Sprint(cfg))
	}
	assert.ErrorIs(t, NewRedis(nil, RedisConfig{}).Check(), ErrInvalidRedisConfig)
	assert.NoError(t, NewRedis(b.Redis, RedisConfig{}).Check())
}

func TestLeasesCountFromARenewalOlderThanTheReplicaLag(t *testing.T) {
	var rs renewals
	rs.reset(1000)
	assert.Equal(t, int64(1000-50), rs.settled(1010, 50), "nothing old enough yet: extend nothing past the join")
	assert.Equal(t, int64(1010), rs.settled(1300, 50), "the latest renewal at least the lag older")
	assert.Equal(t, int64(1010), rs.settled(1320, 50), "a renewal just before is too recent to count")
	assert.Equal(t, int64(1320), rs.settled(1600, 50))
	for s := int64(2000); s < 2100; s += 10 { // more renewals than remembered
		rs.settled(s, 50)
	}
	assert.Equal(t, int64(2050), rs.settled(2100, 50), "exactly the lag older counts")
}
