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

// A process of the local coordinator does not start beside a worker of the
// Redis coordinator cut off past its presence entry's expiry (3 s) but not
// past its membership (LeaseTTL, 10 s by default), whose leases still hold:
// its call in hand ends owning the slot, and the local process, which would
// have served the slot beside it, fails with ErrNamespaceBusy.
func TestLocalProcessRefusedBesideACutOffRedisWorker(t *testing.T) {
	t.Parallel() // mostly waiting, on a partition of its own
	b := testenv.Single(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	sc := slowCallThroughPartition(t, b, ns, 5*time.Second)
	a, part, ownedAtEnd, aDone := sc.c, sc.part, sc.ownedAtEnd, sc.done
	part.Cut()
	time.Sleep(3200 * time.Millisecond) // a's presence entry expires, not its membership

	other := newClientIn(t, b, ns, rmq.WithCoordinator(coordinator.NewLocal()))
	rec := newRecorder()
	require.NoError(t, other.Subscribe("t", rec))
	otherDone := make(chan error, 1)
	go func() { otherDone <- other.Start(ctx) }()
	require.NoError(t, other.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("fast"), Priority: 20}))

	owned := <-ownedAtEnd
	calls := len(rec.snapshot())
	assert.True(t, owned, "the cut-off worker's lease lapsed before its membership: the test proves nothing")
	assert.Zero(t, calls, "the local process served the slot while the cut-off worker's call in hand owned it")
	select {
	case err := <-otherDone:
		assert.ErrorIs(t, err, rmq.ErrNamespaceBusy)
		assert.ErrorContains(t, err, "redis/member")
	case <-time.After(10 * time.Second):
		t.Fatal("the local process's Start did not end")
	}
	part.Heal()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	_ = a.Close(cctx)
	<-aDone
	_ = other.Close(cctx)
}
