package coordinator

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/coordinator/internal/declinebook"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A worker declining four slots hands them to the other worker once the
// decline has stood declinebook.Grace, takes four of the other's in their place,
// and gives up their records without writing them back (their master out of
// its reach): the new owner claims them well within its patience (the drain
// timeout of 5 s + LeaseTTL + a heartbeat). A slot both decline stays put.
func TestRedisCoordinatorMovesDeclinedSlots(t *testing.T) {
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
