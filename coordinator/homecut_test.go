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

// silentHome leaves the calls on the coordinator's own keys that a leave
// makes (Join, Leave, Announce) unanswered while silent: each waits for its
// ctx to end, as a call into a partition waits out its deadline. The slots'
// records (Owners, Claim, Release) still go through.
type silentHome struct {
	rdb.Coordination
	silent atomic.Bool
	calls  atomic.Int64 // left unanswered
}

func (s *silentHome) unanswered(ctx context.Context) (bool, error) {
	if !s.silent.Load() {
		return false, nil
	}
	s.calls.Add(1)
	<-ctx.Done()
	return true, ctx.Err()
}

func (s *silentHome) Join(ctx context.Context, id string, ttl time.Duration, info string, update bool) (int64, error) {
	if cut, err := s.unanswered(ctx); cut {
		return 0, err
	}
	return s.Coordination.Join(ctx, id, ttl, info, update)
}

func (s *silentHome) Leave(ctx context.Context, id string) error {
	if cut, err := s.unanswered(ctx); cut {
		return err
	}
	return s.Coordination.Leave(ctx, id)
}

func (s *silentHome) Announce(ctx context.Context, msg string) error {
	if cut, err := s.unanswered(ctx); cut {
		return err
	}
	return s.Coordination.Announce(ctx, msg)
}

// A leave whose first call to the coordinator's master goes unanswered
// tries no other call there (the leave's announcement, then the releases'
// announcement and the end of the membership would each wait out their
// deadline in turn), and still writes back every slot's record, which lives
// with the slot's keys.
func TestLeaveTriesAnUnansweredCoordinatorMasterOnce(t *testing.T) {
	t.Parallel() // waits on leases and timers, reads nothing process-wide
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		keys := rdb.NewKeyspace(ns)
		co := &silentHome{Coordination: rdb.NewCoordination(b.Redis, keys)}
		board := newSlotBoard()
		m := Member{Namespace: ns, DrainTimeout: 5 * time.Second,
			Topics: []TopicThreads{{Topic: testTopic, SlotAmount: 16, Threads: 2}}}
		run := newRedisRun(co, RedisConfig{LeaseTTL: 2 * time.Second, WorkerID: "solo"}, testLog(), m,
			&testThreads{worker: "solo", board: board, drain: 5 * time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- run.run(ctx) }()
		waitFor(t, board, 5*time.Second, "solo holds every slot", func() bool { return board.count("solo") == 16 })

		co.silent.Store(true)
		begin := time.Now()
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Fatal("the leave did not end")
		}
		t.Logf("left in %v", time.Since(begin))
		assert.Equal(t, int64(1), co.calls.Load(), "calls left unanswered on the coordinator's master")

		records, err := co.Owners(context.Background(), keys.OwnerKeys(testTopic, 16))
		require.NoError(t, err)
		for slot, rec := range records {
			assert.NotContains(t, rec, "solo", "slot %d's record was not written back", slot)
		}
		assert.Zero(t, board.count("solo"), "leases still valid")
	})
}
