package coordinator

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// slowDrain stands for consumer threads with a listener in hand at the
// revocation: each revoked lease is released after hold, and whether the
// lease was still valid at that moment (Owned at the listener's end) is
// counted.
type slowDrain struct {
	hold            time.Duration
	mu              sync.Mutex
	leases          []*Lease
	validAtRelease  atomic.Int64
	lapsedAtRelease atomic.Int64
}

func (h *slowDrain) Assigned(l *Lease) {
	h.mu.Lock()
	h.leases = append(h.leases, l)
	h.mu.Unlock()
	go func() {
		<-l.Revoking()
		time.Sleep(h.hold)
		if l.Valid() {
			h.validAtRelease.Add(1)
		} else {
			h.lapsedAtRelease.Add(1)
		}
		l.Release()
	}()
}

func (h *slowDrain) Revoked(*Lease) {}

func (h *slowDrain) held() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.leases {
		if l.Valid() {
			n++
		}
	}
	return n
}

// A worker that stops (Run's ctx ends) with a listener in hand on each slot
// that takes 2.5 s, a lease TTL of 1 s and a drain timeout of 10 s keeps
// every lease valid until its release: the leave's own announcement brings a
// new assignment it never applies, and the heartbeat extends the revoked
// leases all the same (revokedAll), up to their drain deadline.
func TestGracefulLeaveKeepsLeasesUntilTheDrainTimeout(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	ttl := time.Second
	co := rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns))
	m := Member{Namespace: ns, DrainTimeout: 10 * time.Second,
		Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 4, Threads: 1}}}
	h := &slowDrain{hold: 2500 * time.Millisecond}
	run := newRedisRun(co, RedisConfig{LeaseTTL: ttl, WorkerID: "a"}, testLog(), m, h)
	stop, done := goRun(t, run, "a")
	deadline := time.Now().Add(5 * time.Second)
	for h.held() < 4 {
		require.True(t, time.Now().Before(deadline), "a holds every slot")
		time.Sleep(5 * time.Millisecond)
	}
	// A second worker, which takes the slots once they are released.
	board := newSlotBoard()
	startWorkerWith(t, b, ns, "b", board, 4, 1, ttl, 10*time.Second)
	waitFor(t, board, 5*time.Second, "b holds half", func() bool { return board.count("b") == 2 })
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
		done <- nil
	case <-time.After(8 * time.Second):
		t.Fatal("Run did not return")
	}
	waitFor(t, board, 5*time.Second, "b holds every slot", func() bool { return board.count("b") == 4 })
	t.Logf("Run returned %v after ctx ended; at their release %d leases were valid, %d had lapsed",
		time.Since(start).Round(time.Millisecond), h.validAtRelease.Load(), h.lapsedAtRelease.Load())
	assert.Zero(t, h.lapsedAtRelease.Load(), "leases lapsed during a graceful leave, well before the drain timeout")
}
