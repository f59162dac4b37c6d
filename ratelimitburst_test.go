package rmq_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A burst that RateLimit.Validate accepts however large (math.MaxInt, as
// "rmq limit t 5/9223372036854775807" sets it: 2^63 as a float64) limits the
// topic to its rate: the limiter's count of tokens must not overflow an int,
// which would hand out no token at all.
func TestHugeBurstLimitsByTheRate(t *testing.T) {
	b := testenv.Mini(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "p", SlotAmount: 1, Type: rmq.Priority}))
	limit := rmq.RateLimit{PerSecond: 5, Burst: math.MaxInt}
	require.NoError(t, limit.Validate())
	require.NoError(t, c.SetRateLimit(ctx, "p", limit))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("x"), Priority: 20}))
	got := make(chan struct{}, 1)
	require.NoError(t, c.Subscribe("p", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
		select {
		case got <- struct{}{}:
		default:
		}
		return nil
	})))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		require.NoError(t, c.Close(ctx))
		require.NoError(t, <-done)
	})
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatalf("no delivery in 5 s under the limit %v (a valid limit of 5/s)", limit)
	}
}
