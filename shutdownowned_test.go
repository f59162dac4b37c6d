package rmq_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A listener in hand at a graceful Shutdown stays the slot's owner until it
// ends, within the consume timeout, even past the lease TTL and with another
// worker waiting for the slot: the leave's own announcement brings a new
// assignment the leaving worker never applies, and its heartbeat still
// extends the revoked leases up to their drain deadline. (They lapsed after
// a TTL, and a listener that checks Owned threw its work away.)
func TestShutdownKeepsTheListenerInHandOwned(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	coord := func() rmq.Option {
		return rmq.WithCoordinator(coordinator.NewRedis(b.Redis, coordinator.RedisConfig{LeaseTTL: time.Second}))
	}
	a := newClientIn(t, b, ns, coord())
	define(t, a, "t", 1, rmq.Priority)
	started := make(chan struct{}, 1)
	var ownedAtEnd, ended atomic.Int32
	require.NoError(t, a.Subscribe("t", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		started <- struct{}{}
		time.Sleep(2 * time.Second)
		if rmq.Owned(ctx) {
			ownedAtEnd.Add(1)
		}
		ended.Add(1)
		return nil
	})))
	aDone := make(chan error, 1)
	go func() { aDone <- a.Start(context.Background()) }()
	awaitHeld(t, a, "t", 1, 100*time.Millisecond)

	other := newClientIn(t, b, ns, coord())
	require.NoError(t, other.Subscribe("t", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error { return nil })))
	run(t, other)
	eventually(t, 5*time.Second, "both workers joined", func() bool {
		ws, err := a.Workers(context.Background())
		return err == nil && len(ws) == 2
	})

	require.NoError(t, a.Producer().Send(context.Background(), rmq.PriorityMessage{Topic: "t", Content: []byte("x"), Priority: 100}))
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("no delivery")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, a.Shutdown(ctx))
	require.NoError(t, <-aDone)
	require.EqualValues(t, 1, ended.Load())
	assert.EqualValues(t, 1, ownedAtEnd.Load(),
		"the listener in hand at a graceful shutdown ended seeing Owned false, well within the consume timeout")
}
