package coordinator

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// joinedID waits until run has joined and returns its member id.
func joinedID(t *testing.T, run *redisRun) string {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if id, _, _, _ := run.state(); id != "" {
			return id
		}
		require.True(t, time.Now().Before(deadline), "the run did not join within 5s")
		time.Sleep(2 * time.Millisecond)
	}
}

// Two Runs with one WorkerID (a pod with a stable name restarted while its
// predecessor still runs or is cut off, two clients sharing one
// coordinator.NewRedis) join as two members and share the slots. Were they
// one member, the second would find the first's records naming its own id
// and hold every slot beside the first.
func TestRedisRunsSharingAWorkerIDAreTwoMembers(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	board := newSlotBoard()
	coordination := func() rdb.Coordination { return rdb.NewCoordination(b.Redis, rdb.NewKeyspace(ns)) }
	first := startRunAs(t, coordination(), ns, "w", "first", board, 2*time.Second)
	waitFor(t, board, 5*time.Second, "the first Run holds every slot", func() bool { return board.count("first") == 16 })

	second := startRunAs(t, coordination(), ns, "w", "second", board, 2*time.Second)
	shared := func() bool { return board.count("first") == 8 && board.count("second") == 8 }
	for deadline := time.Now().Add(5 * time.Second); !shared() && board.overlap.Load() == 0 && time.Now().Before(deadline); {
		board.check()
		time.Sleep(2 * time.Millisecond)
	}
	require.Zero(t, board.overlap.Load(), "two valid leases of one slot: the first Run holds %d slots, the second %d",
		board.count("first"), board.count("second"))
	require.True(t, shared(), "the Runs hold half the slots each: the first holds %d, the second %d",
		board.count("first"), board.count("second"))

	firstID, secondID := joinedID(t, first), joinedID(t, second)
	assert.NotEqual(t, firstID, secondID)
	format := regexp.MustCompile(`^w\.[0-9a-f]{12}\.1$`)
	assert.Regexp(t, format, firstID)
	assert.Regexp(t, format, secondID)
}
