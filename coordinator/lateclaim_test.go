package coordinator

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// claimGate holds the claims of the workers that share it while frozen, as
// a master that stopped answering holds the calls sent to it: each claim
// reports ErrUnanswered at once, as a Cluster's routed pipeline does after
// MasterWait, and goes through when thaw is called, in the order the calls
// came.
type claimGate struct {
	mu     sync.Mutex
	frozen bool
	queued []heldClaim
}

// heldClaim is a claim the gate holds.
type heldClaim struct {
	co               rdb.Coordination
	worker           string
	owners, expected []string
	at               time.Time
}

// gatedClaims is a worker's Coordination whose claims go through gate.
type gatedClaims struct {
	rdb.Coordination
	gate *claimGate
}

func (g *gatedClaims) Claim(ctx context.Context, id string, owners []string, expected []string) ([]string, error) {
	g.gate.mu.Lock()
	if !g.gate.frozen {
		g.gate.mu.Unlock()
		return g.Coordination.Claim(ctx, id, owners, expected)
	}
	g.gate.queued = append(g.gate.queued, heldClaim{co: g.Coordination, worker: id,
		owners: append([]string(nil), owners...), expected: append([]string(nil), expected...), at: time.Now()})
	g.gate.mu.Unlock()
	errs := make([]error, len(owners))
	for i := range errs {
		errs[i] = rdb.ErrUnanswered
	}
	return make([]string, len(owners)), &rdb.EachError{Errs: errs}
}

// last returns when the newest claim of worker (by name, not incarnation)
// was queued, zero if none was, and how many slots its queued claims name.
func (c *claimGate) last(worker string) (time.Time, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	slots := make(map[string]bool)
	for _, q := range c.queued {
		if strings.HasPrefix(q.worker, worker+".") {
			at = q.at
			for _, k := range q.owners {
				slots[k] = true
			}
		}
	}
	return at, len(slots)
}

// thaw sends the held claims in the order they came and returns the owner
// keys each worker's claims won (a worker's later claims of a key its
// earlier one won report it won too: the record names the worker). Claims
// made meanwhile wait until it is done, as a master answers the calls it
// holds before those sent after them; the workers' other calls go on.
func (c *claimGate) thaw(t *testing.T) map[string]map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	queued := c.queued
	c.frozen, c.queued = false, nil
	won := make(map[string]map[string]bool)
	for _, q := range queued {
		records, err := q.co.Claim(context.Background(), q.worker, q.owners, q.expected)
		require.NoError(t, err)
		name, _, _ := strings.Cut(q.worker, ".")
		for i, rec := range records {
			if rec != "" {
				if won[name] == nil {
					won[name] = make(map[string]bool)
				}
				won[name][q.owners[i]] = true
			}
		}
	}
	return won
}

// startRun runs worker name on ns through co (16 slots, 2 threads, a lease
// of ttl), and stops it when t ends.
func startRun(t *testing.T, co rdb.Coordination, ns, name string, board *slotBoard, ttl time.Duration) {
	startRunAs(t, co, ns, name, name, board, ttl)
}

// startRunAs is startRun of a Run with WorkerID workerID whose leases are on
// board under label; it returns the Run.
func startRunAs(t *testing.T, co rdb.Coordination, ns, workerID, label string, board *slotBoard, ttl time.Duration) *redisRun {
	m := Member{Namespace: ns, DrainTimeout: 5 * time.Second,
		Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 16, Threads: 2}}}
	run := newRedisRun(co, RedisConfig{LeaseTTL: ttl, WorkerID: workerID}, slog.New(slog.DiscardHandler), m,
		&testThreads{worker: label, board: board, drain: 5 * time.Millisecond})
	goRun(t, run, label)
	return run
}

// startGatedWorker runs worker name on ns with its claims going through gate.
func startGatedWorker(t *testing.T, b testenv.Backend, ns, name string, board *slotBoard, gate *claimGate) {
	startRun(t, &gatedClaims{Coordination: rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns)), gate: gate}, ns, name, board, 2*time.Second)
}

// A claim whose reply did not come in time can still go through, after its
// slot was assigned elsewhere: its master was slow, and answered the calls
// in the order they came. The record then names a live worker that neither
// holds the slot nor is assigned it. That worker hands the record back at
// its next look, so the slot's new owner takes it at once rather than after
// its patience (drain timeout 5 s + TTL 2 s + a heartbeat: 7.4 s).
func TestLateClaimIsHandedBack(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		board := newSlotBoard()
		gate := &claimGate{}
		startGatedWorker(t, b, ns, "a", board, gate)
		waitFor(t, board, 5*time.Second, "a holds every slot", func() bool { return board.count("a") == 16 })
		w := startWorker(t, b, ns, "b", board, 2, 2*time.Second)
		waitFor(t, board, 5*time.Second, "a and b hold half each", func() bool {
			return board.count("a") == 8 && board.count("b") == 8
		})

		// b leaves: a is assigned b's slots, and its claims of them hang.
		gate.mu.Lock()
		gate.frozen = true
		gate.mu.Unlock()
		w.stop()
		err := <-w.done
		w.done <- err // for the cleanup
		require.NoError(t, err)
		waitFor(t, board, 5*time.Second, "a claims b's 8 slots", func() bool {
			_, n := gate.last("a")
			return n == 8
		})

		// c joins and is assigned b's slots; a stops claiming them.
		startGatedWorker(t, b, ns, "c", board, gate)
		waitFor(t, board, 10*time.Second, "c claims its 8 slots, and a claims no more", func() bool {
			_, n := gate.last("c")
			at, _ := gate.last("a")
			return n == 8 && time.Since(at) > time.Second
		})
		assert.Equal(t, 8, board.count("a"), "a's slots")
		assert.Zero(t, board.count("c"), "c's slots before the claims went through")

		// The master answers: a's first claim wins b's slots.
		thawed := time.Now()
		won := gate.thaw(t)
		require.Len(t, won["a"], 8, "the slots a's late claim won")
		require.Empty(t, won["c"], "the slots c's claims won")
		took := waitFor(t, board, 10*time.Second, "c holds its slots", func() bool { return board.count("c") == 8 })
		t.Logf("c held its slots %v after the claims went through", time.Since(thawed).Round(time.Millisecond))
		assert.Less(t, took, 3*time.Second, "c waited out its patience: a's late records were not handed back")
		assert.Equal(t, 8, board.count("a"), "a's slots")
		assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
	})
}

// retriedClaim, once armed, lets its next Claim go through and then holds
// it until resume is closed, then sends it again and returns that answer:
// what a client's retry after a lost reply returns, the first attempt having
// gone through.
type retriedClaim struct {
	rdb.Coordination
	armed   atomic.Bool
	landed  chan struct{}
	resume  chan struct{}
	resumed sync.Once
	claimed atomic.Int32 // slots the first attempt won
}

// let closes resume, once.
func (r *retriedClaim) let() { r.resumed.Do(func() { close(r.resume) }) }

func (r *retriedClaim) Claim(ctx context.Context, id string, owners []string, expected []string) ([]string, error) {
	if !r.armed.CompareAndSwap(true, false) {
		return r.Coordination.Claim(ctx, id, owners, expected)
	}
	first, err := r.Coordination.Claim(ctx, id, owners, expected)
	if err != nil {
		return nil, err
	}
	for _, rec := range first {
		if rec != "" {
			r.claimed.Add(1)
		}
	}
	close(r.landed)
	<-r.resume
	return r.Coordination.Claim(ctx, id, owners, expected)
}

// A claim whose reply was lost and that the client sent again finds the
// record it wrote itself. That is a claim won, not lost: the worker holds
// the slots at once. Before, it took the answer for a lost race and, once
// the slots were assigned elsewhere, never looked at them again, so their
// new owner waited out its patience (drain timeout 5 s + TTL 2 s + a
// heartbeat: 7.4 s). a's run loop waits in the claim meanwhile, and its
// leases are not extended past an assignment the loop has not applied, so
// a's lease (6 s) outlasts the wait, as a lease outlasts a client's retry
// (a 2 s lease lapsed when a slow machine stretched the wait, and a's own
// slots were away at the check).
func TestClaimRetriedAfterALostReplyIsWon(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		board := newSlotBoard()
		co := &retriedClaim{Coordination: rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns)),
			landed: make(chan struct{}), resume: make(chan struct{})}
		startRun(t, co, ns, "a", board, 6*time.Second)
		t.Cleanup(co.let) // before the run's own cleanup: a claim held back would hold up its end
		waitFor(t, board, 5*time.Second, "a holds every slot", func() bool { return board.count("a") == 16 })
		w := startWorker(t, b, ns, "b", board, 2, 2*time.Second)
		waitFor(t, board, 5*time.Second, "a and b hold half each", func() bool {
			return board.count("a") == 8 && board.count("b") == 8
		})

		// b leaves; a's claim of b's slots goes through, and a hears
		// nothing of it until c has joined.
		co.armed.Store(true)
		w.stop()
		err := <-w.done
		w.done <- err // for the cleanup
		require.NoError(t, err)
		select {
		case <-co.landed:
		case <-time.After(10 * time.Second):
			t.Fatal("a claimed nothing")
		}
		// b releases its slots one by one: a's first claim may name only some.
		require.Positive(t, co.claimed.Load(), "the slots a's first attempt won")
		startWorker(t, b, ns, "c", board, 2, 2*time.Second)
		time.Sleep(500 * time.Millisecond) // c joins and finds b's slots held by a
		resumed := time.Now()
		co.let()
		took := waitFor(t, board, 10*time.Second, "c holds its 8 slots", func() bool { return board.count("c") == 8 })
		t.Logf("c held its slots %v after a's retried claim of %d answered", time.Since(resumed).Round(time.Millisecond),
			co.claimed.Load())
		assert.Less(t, took, 3*time.Second, "c waited out its patience: a took its own record for a lost race")
		assert.Equal(t, 8, board.count("a"), "a's slots")
		assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
	})
}
