package coordinator

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// stalledRelease leaves its next Release, once stall is set, unanswered
// until its ctx ends, and then fails it slot by slot, as a Cluster's
// routed pipeline reports a call cut short (*rdb.EachError).
type stalledRelease struct {
	rdb.Coordination
	stall   atomic.Bool
	entered chan struct{}
}

func (s *stalledRelease) Release(ctx context.Context, owners []string, records []string) error {
	if !s.stall.CompareAndSwap(true, false) {
		return s.Coordination.Release(ctx, owners, records)
	}
	close(s.entered)
	<-ctx.Done()
	errs := make([]error, len(owners))
	for i := range errs {
		errs[i] = ctx.Err()
	}
	return &rdb.EachError{Errs: errs}
}

// A release under way when the Run ends is cut short with the reconcile;
// the leave then writes the records back. That is no incident: nothing is
// logged at Warn, and the next owner takes the slots at once rather than
// after its patience.
func TestReleaseCutByTheRunsEndWarnsOfNothing(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		co := &stalledRelease{Coordination: rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns)), entered: make(chan struct{})}
		warnings := &testenv.Warnings{}
		board := newSlotBoard()
		m := Member{Namespace: ns, DrainTimeout: 5 * time.Second,
			Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 16, Threads: 2}}}
		run := newRedisRun(co, RedisConfig{LeaseTTL: 2 * time.Second, WorkerID: "a"}, slog.New(warnings), m,
			&testThreads{worker: "a", board: board, drain: 5 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run.run(ctx) }()
		waitFor(t, board, 5*time.Second, "a holds every slot", func() bool { return board.count("a") == 16 })

		co.stall.Store(true)
		startWorker(t, b, ns, "b", board, 2, 2*time.Second) // a releases half of its slots
		select {
		case <-co.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("a released nothing")
		}
		left := time.Now()
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("a did not leave")
		}
		// b's patience with a record it does not know released would be
		// 7.4 s (drain timeout 5 s + TTL 2 s + a heartbeat).
		took := waitFor(t, board, 10*time.Second, "b holds every slot", func() bool { return board.count("b") == 16 })
		t.Logf("b held every slot %v after a began to leave", time.Since(left).Round(time.Millisecond))
		assert.Less(t, took, 3*time.Second, "b waited out its patience: a's records were not written back")
		assert.Empty(t, warnings.Logged(), "a's Warn lines")
		assert.Zero(t, board.overlap.Load(), "two valid leases of one slot")
	})
}
