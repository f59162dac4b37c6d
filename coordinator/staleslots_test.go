package coordinator

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// The leader takes a topic's slot amount from the workers that serve it,
// not from one whose description outlives a definition since deleted (a
// worker crashed or leaving, its membership not yet expired), whatever the
// order of their ids: the serving worker holds all 16 slots, not 4.
func TestLeaderTakesSlotAmountFromServingWorkers(t *testing.T) {
	t.Parallel()
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	co := rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns))
	stale, err := json.Marshal(redisWorker{Started: time.Now().Add(-time.Minute).UnixMilli(), TTL: 10000, Leaving: true,
		Topics: map[string]redisTopicSpec{testTopic: {Slots: 4, Threads: 1}}})
	require.NoError(t, err)
	_, err = co.Join(context.Background(), "zzz.old.1", 10*time.Second, string(stale), false) // sorts after "a…"
	require.NoError(t, err)

	board := newSlotBoard()
	startWorker(t, b, ns, "a", board, 2, 2*time.Second)
	waitFor(t, board, 5*time.Second, "a holds every slot of the topic as defined now", func() bool {
		return board.count("a") == 16
	})
}
