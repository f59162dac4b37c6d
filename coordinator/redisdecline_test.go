package coordinator

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator/internal/declinebook"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A worker declining four slots hands them to the other worker once the
// decline has stood declinebook.Grace, takes four of the other's in their place,
// and gives up their records without writing them back (their master out of
// its reach): the new owner claims them well within its patience (the drain
// timeout of 5 s + LeaseTTL + a heartbeat). A slot both decline stays put.
func TestRedisCoordinatorMovesDeclinedSlots(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		board := newSlotBoard()
		ttl := 2 * time.Second
		da, db := NewDeclines(), NewDeclines()
		startDecliningWorker(t, b, ns, "a", board, 1, ttl, da)
		startDecliningWorker(t, b, ns, "b", board, 1, ttl, db)
		waitFor(t, board, 5*time.Second, "shared", func() bool { return board.count("a") == 8 && board.count("b") == 8 })
		var mine []int // four of a's slots
		board.mu.Lock()
		for s := range 16 {
			if l := board.holders[s]["a"]; l != nil && len(mine) < 4 {
				mine = append(mine, s)
			}
		}
		board.mu.Unlock()
		holds := func(w string, slots []int) bool {
			board.mu.Lock()
			defer board.mu.Unlock()
			for _, s := range slots {
				if l := board.holders[s][w]; l == nil || !l.Valid() {
					return false
				}
			}
			return true
		}

		da.Set(testTopic, mine)
		took := waitFor(t, board, 5*time.Second, "b holds the slots a declines, each keeps its share", func() bool {
			return holds("b", mine) && board.count("a") == 8 && board.count("b") == 8
		})
		t.Logf("declined slots served by the other worker %v after the decline", took)
		assert.GreaterOrEqual(t, took, declinebook.Grace, "a decline honoured before its grace")
		assert.Less(t, took, declinebook.Grace+3*time.Second, "the new owner waited out its patience: the given-up records were not seen")

		// Both decline one slot: it stays where it is.
		db.Set(testTopic, mine[:1])
		time.Sleep(declinebook.Grace + time.Second)
		assert.True(t, holds("b", mine[:1]), "a slot both workers decline moved")

		da.Set(testTopic, nil)
		db.Set(testTopic, nil)
		time.Sleep(time.Second)
		assert.Equal(t, 8, board.count("a"))
		assert.Equal(t, 8, board.count("b"))
		assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
	})
}

// Records of one worker's claims made in the same millisecond read alike
// ("<token>:<worker>"): a record given up on one slot must not let the next
// owner claim over the same-reading record of another slot, whose lease
// still runs.
func TestRedisGivenUpRecordCountsForItsSlotAlone(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		start := func(name string) (*redisRun, *redisTopic, string) {
			m := Member{Namespace: ns, DrainTimeout: 5 * time.Second,
				Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 16, Threads: 1}}}
			r := newRedisRun(rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns)), RedisConfig{LeaseTTL: 10 * time.Second, WorkerID: name},
				slog.New(slog.DiscardHandler), m, holdingThreads{})
			require.NoError(t, r.join(ctx))
			id, _, _, _ := r.state()
			tp := r.topics[testTopic]
			tp.desired = make([]Owner, 16)
			tp.desired[0], tp.desired[1] = Owner{Worker: id, Thread: 0}, Owner{Worker: id, Thread: 0}
			return r, tp, id
		}
		a, ta, aid := start("a")
		same := "100:" + aid
		for _, s := range []int{0, 1} {
			require.NoError(t, b.Redis.Set(ctx, ta.keys[s], same, 0).Err())
		}
		require.NoError(t, a.claim(ctx, ta, aid)) // ours already: held with the record as it reads
		require.NotNil(t, ta.held[0])
		require.NotNil(t, ta.held[1])
		ta.held[1].grant.Lose()
		a.releaseFailed(ta, ta.held[1], errDeclinedSlot, false)
		require.NoError(t, a.redescribe(ctx, aid))

		bRun, tb, bid := start("b")
		require.NoError(t, bRun.claim(ctx, tb, bid))
		assert.NotNil(t, tb.held[1], "the record given up on slot 1 was not claimed over")
		assert.Nil(t, tb.held[0], "slot 0 claimed over a record given up on slot 1 only, its lease running")
		assert.True(t, ta.held[0].grant.Lease().Valid())
		rec, err := b.Redis.Get(ctx, ta.keys[0]).Result()
		require.NoError(t, err)
		assert.Equal(t, same, rec)
	})
}

// holdingThreads stands in for threads that hold every lease they are given
// and release none: the slots stay put for the test, which drives the run's
// claims itself and never ends it, and no goroutine is left waiting.
type holdingThreads struct{}

func (holdingThreads) Assigned(*Lease) {}

func (holdingThreads) Revoked(*Lease) {}
