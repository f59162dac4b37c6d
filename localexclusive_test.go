package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A process of the local coordinator cut off from Redis past its presence
// entry's expiry no longer owns its slots: a second local process may start
// meanwhile and serve them, so a listener call of the first one that was in
// hand ends seeing Owned false (it saw true: the local leases never ended).
// Once back, the first process finds the second and never owns again.
func TestLocalProcessCutOffPastItsPresenceLosesOwnership(t *testing.T) {
	t.Parallel() // mostly waiting, on a partition of its own
	b := testenv.Single(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	sc := slowCallThroughPartition(t, b, ns, 6*time.Second, rmq.WithCoordinator(coordinator.NewLocal()))
	a, part, ownedAtEnd, aDone := sc.c, sc.part, sc.ownedAtEnd, sc.done
	part.Cut()
	time.Sleep(3500 * time.Millisecond) // a's presence entry expires

	other := newClientIn(t, b, ns, rmq.WithCoordinator(coordinator.NewLocal()))
	rec := newRecorder()
	require.NoError(t, other.Subscribe("t", rec))
	otherDone := make(chan error, 1)
	go func() { otherDone <- other.Start(ctx) }()
	require.NoError(t, other.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("fast"), Priority: 20}))
	rec.waitCalls(t, 1, 5*time.Second) // the second process serves the slot
	part.Heal()

	assert.False(t, <-ownedAtEnd, "the cut-off process's call in hand ended owning a slot another process served meanwhile")
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_ = a.Close(cctx)
	assert.ErrorIs(t, <-aDone, rmq.ErrNamespaceBusy, "the first process, back, finds the second")
	_ = other.Close(cctx)
	if err := <-otherDone; err != nil {
		assert.ErrorIs(t, err, rmq.ErrNamespaceBusy, "the second process may find the first back and stop too")
	}
}
