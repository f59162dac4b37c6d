package coordinator

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Handovers from a live holder: the next owner waits out its patience (drain
// timeout + TTL + a heartbeat) for the holder's revoked lease to end, which
// holds only if the patience counts from the record of the holder it waits
// for, and if that lease does end at the drain timeout.

// startHandoverRun runs worker name through co on a topic of slots slots
// with one thread, handler h, a lease of ttl and a drain timeout of drain,
// stops it when t ends, and returns its member id once it joined.
func startHandoverRun(t *testing.T, co rdb.Coordination, ns, name string, slots int, h Handler, ttl, drain time.Duration) string {
	t.Helper()
	m := Member{Namespace: ns, DrainTimeout: drain, Topics: []TopicThreads{{Topic: testTopic, SlotAmount: slots, Threads: 1}}}
	run := newRedisRun(co, RedisConfig{LeaseTTL: ttl, WorkerID: name}, testLog(), m, h)
	goRun(t, run, name)
	return joinedID(t, run)
}

// testAssigner makes the test the leader of ns (a leader lease no worker
// holds) and returns what writes testTopic's assignment: slot i to the
// first thread of owners[i].
func testAssigner(t *testing.T, b testenv.Backend, ns string) func(owners ...string) {
	ctx := context.Background()
	keys := rdb.NewKeyspace(ns)
	co := rdb.NewCoordination(b.Redis, keys)
	require.NoError(t, b.Redis.Set(ctx, keys.Leader(), "test", 0).Err())
	return func(owners ...string) {
		t.Helper()
		os := make([]Owner, len(owners))
		for i, w := range owners {
			os[i] = Owner{Worker: w}
		}
		e, err := co.Assign(ctx, "test", map[string]string{testTopic: encodeAssignment(os)})
		require.NoError(t, err)
		require.GreaterOrEqual(t, e, int64(0), "assignment refused")
	}
}

// A worker waiting for a slot held by a live worker counts its patience
// from when it first read the record of the holder it waits for now, not
// from when it began to wait for the slot. Here slot 0 goes a → b (a's
// listener runs on, so b waits), b's loop misses the next assignment (its
// read of the assignment fails for a while, its heartbeats go on), the slot
// goes to c, which claims it once a's lease is taken away, and back to b
// once b's patience since it first waited (for a) is over. c's revoked
// lease is valid for its drain timeout yet: b must not claim over it.
func TestRedisPatienceCountsFromTheCurrentHoldersRecord(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	keys := rdb.NewKeyspace(ns)
	assign := testAssigner(t, b, ns)
	const ttl, drain = time.Second, time.Second // patience 2.2 s
	board := newSlotBoard()
	ha := &testThreads{worker: "a", board: board}
	hb := &testThreads{worker: "b", board: board}
	hc := &testThreads{worker: "c", board: board}
	ha.linger.Store(true)
	coB := &flakyCoordination{Coordination: rdb.NewCoordination(b.Redis, keys)}
	a := startHandoverRun(t, rdb.NewCoordination(b.Redis, keys), ns, "a", 1, ha, ttl, drain)
	bid := startHandoverRun(t, coB, ns, "b", 1, hb, ttl, drain)
	c := startHandoverRun(t, rdb.NewCoordination(b.Redis, keys), ns, "c", 1, hc, ttl, drain)

	assign(a)
	waitFor(t, board, 3*time.Second, "a holds slot 0", func() bool { return board.count("a") == 1 })

	assign(bid) // a's listener runs on; b finds a live holder and waits
	waiting := time.Now()
	time.Sleep(300 * time.Millisecond)
	coB.stale.Store(true) // b's loop learns of no new assignment

	assign(c)
	waitFor(t, board, 3*time.Second, "c holds slot 0 (a's lease taken away at its drain timeout)",
		func() bool { return board.count("c") == 1 })
	hc.linger.Store(true)
	time.Sleep(time.Until(waiting.Add(2600 * time.Millisecond))) // b's patience since it began to wait is over

	assign(bid) // c's listener runs on, its lease valid for up to its drain timeout
	coB.stale.Store(false)
	holdsFor(board, drain+500*time.Millisecond, func() bool { return board.overlap.Load() == 0 })
	assert.Zero(t, board.overlap.Load(), "b claimed slot 0 over c within c's drain timeout (%v) after c was revoked", drain)
	hc.linger.Store(false)
	waitFor(t, board, 5*time.Second, "b holds slot 0", func() bool { return board.count("b") == 1 })
	assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
}

// racedClaims is a worker's Coordination whose next claim, once rival is
// set, finds the record rewritten to rival just before it: a claim race lost.
type racedClaims struct {
	rdb.Coordination
	redis testenv.Backend
	rival atomic.Pointer[string] // the record the next claim finds
}

func (r *racedClaims) Claim(ctx context.Context, id string, owners []string, expected []string) ([]string, error) {
	if rec := r.rival.Swap(nil); rec != nil {
		for _, k := range owners {
			if err := r.redis.Redis.Set(ctx, k, *rec, 0).Err(); err != nil {
				return nil, err
			}
		}
	}
	return r.Coordination.Claim(ctx, id, owners, expected)
}

// The patience starts again whenever the record of the slot waited for
// changes to another live holder's: while the worker waits (the slot went
// from one holder to another), and when a claim made once the patience ran
// out loses its race to another worker. In both cases the new holder's lease
// may have just begun, and its drain timeout is yet to come.
func TestRedisPatienceStartsAgainForANewHoldersRecord(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		for _, tc := range []struct {
			name  string
			raced bool // the new record comes in a lost claim race, not while waiting
		}{{"holder changes while waiting", false}, {"claim race lost", true}} {
			t.Run(tc.name, func(t *testing.T) {
				ctx := context.Background()
				ns := testenv.Namespace(t, b)
				keys := rdb.NewKeyspace(ns)
				co := &racedClaims{Coordination: rdb.NewCoordination(b.Redis, keys), redis: b}
				for _, id := range []string{"a", "c"} { // live holders
					_, err := co.Join(ctx, id, time.Minute, "{}", false)
					require.NoError(t, err)
				}
				m := Member{Namespace: ns, DrainTimeout: 100 * time.Millisecond,
					Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 1, Threads: 1}}}
				r := newRedisRun(co, RedisConfig{LeaseTTL: 500 * time.Millisecond, WorkerID: "b"}, testLog(), m, holdingThreads{})
				require.NoError(t, r.join(ctx))
				id, _, _, _ := r.state()
				tp := r.topics[testTopic]
				tp.desired = []Owner{{Worker: id}}
				patience := r.patience()

				require.NoError(t, b.Redis.Set(ctx, tp.keys[0], "5:a", 0).Err())
				require.NoError(t, r.claim(ctx, tp, id))
				require.Nil(t, tp.held[0], "claimed over a live holder at once")
				time.Sleep(patience + 50*time.Millisecond)
				if tc.raced {
					rival := "6:c"
					co.rival.Store(&rival)
					require.NoError(t, r.claim(ctx, tp, id))
					require.Nil(t, tp.held[0], "won a claim race that was lost")
				} else {
					require.NoError(t, b.Redis.Set(ctx, tp.keys[0], "6:c", 0).Err())
				}
				require.NoError(t, r.claim(ctx, tp, id))
				assert.Nil(t, tp.held[0], "claimed over c's record at once, on a patience counted from a's")

				time.Sleep(patience + 50*time.Millisecond)
				require.NoError(t, r.claim(ctx, tp, id))
				assert.NotNil(t, tp.held[0], "waited past the patience for c's record")
			})
		}
	})
}

// slowOwners holds every read of owner records while hang is set, as a call
// waiting out the client's timeouts does.
type slowOwners struct {
	rdb.Coordination
	hang atomic.Bool
}

func (s *slowOwners) Owners(ctx context.Context, owners []string) ([]string, error) {
	for s.hang.Load() && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	return s.Coordination.Owners(ctx, owners)
}

// A revoked lease ends at its drain timeout even while the loop that takes
// it away is held in a call (here a read of the record of another slot it
// waits for): the heartbeat, which goes on, never extends it past that. The
// slot's next owner, whose patience counts on that, then never holds the
// slot beside it.
func TestRedisRevokedLeaseEndsAtItsDrainTimeoutWhileTheLoopIsHeld(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	keys := rdb.NewKeyspace(ns)
	co := rdb.NewCoordination(b.Redis, keys)
	assign := testAssigner(t, b, ns)
	// A live member that holds slot 1 and never lets it go.
	_, err := co.Join(ctx, "ghost", time.Minute, "{}", false)
	require.NoError(t, err)
	require.NoError(t, b.Redis.Set(ctx, keys.OwnerKeys(testTopic, 2)[1], "5:ghost", 0).Err())
	const ttl, drain = time.Second, time.Second // patience 2.2 s
	board := newSlotBoard()
	ha := &testThreads{worker: "a", board: board}
	hb := &testThreads{worker: "b", board: board}
	ha.linger.Store(true) // a's listener of slot 0 runs on until its lease is taken away
	coA := &slowOwners{Coordination: rdb.NewCoordination(b.Redis, keys)}
	a := startHandoverRun(t, coA, ns, "a", 2, ha, ttl, drain)
	bid := startHandoverRun(t, rdb.NewCoordination(b.Redis, keys), ns, "b", 2, hb, ttl, drain)

	assign(a, "ghost")
	waitFor(t, board, 3*time.Second, "a holds slot 0", func() bool { return board.count("a") == 1 })
	board.mu.Lock()
	a0 := board.holders[0]["a"]
	board.mu.Unlock()

	assign(bid, a) // a revokes slot 0 and waits for slot 1, held by the ghost
	revoked := time.Now()
	waitFor(t, board, time.Second, "a revokes slot 0", a0.IsRevoked)
	time.Sleep(300 * time.Millisecond) // a heartbeat reported the new epoch, which a applied
	coA.hang.Store(true)               // a's next looks are held in their read of slot 1's record
	defer coA.hang.Store(false)

	time.Sleep(time.Until(revoked.Add(drain + 100*time.Millisecond)))
	assert.False(t, a0.Valid(), "a's revoked lease is valid %v after the revoke (drain timeout %v), %v left",
		time.Since(revoked).Round(time.Millisecond), drain, a0.Remaining().Round(time.Millisecond))
	waitFor(t, board, 4*time.Second, "b holds slot 0", func() bool { return board.count("b") == 1 })
	assert.Zero(t, board.overlap.Load(), "b holds slot 0 while a's revoked lease is valid")
}
