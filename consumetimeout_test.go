package rmq_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A consume timeout past MaxConsumeTimeout fails with ErrInvalidOption: near
// the largest Duration its rounding up to whole seconds would overflow to a
// negative timeout, and every batch would be handed back at once. The
// longest one taken works.
func TestConsumeTimeoutIsBounded(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	for _, d := range []time.Duration{math.MaxInt64, rmq.MaxConsumeTimeout + time.Second} {
		_, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithConsumeTimeout(d))
		require.ErrorIs(t, err, rmq.ErrInvalidOption, "%v", d)
	}
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithConsumeTimeout(rmq.MaxConsumeTimeout))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	define(t, c, "t", 1, rmq.Priority)
	deadline := make(chan time.Duration, 1)
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		d, _ := ctx.Deadline()
		select {
		case deadline <- time.Until(d):
		default:
		}
		return ctx.Err()
	})))
	run(t, c)
	require.NoError(t, c.Producer().Send(context.Background(), rmq.PriorityMessage{Topic: "t", Content: []byte("m"), Priority: 20}))
	select {
	case d := <-deadline:
		assert.Greater(t, d, rmq.MaxConsumeTimeout-time.Hour, "the listener's deadline is the consume timeout away")
	case <-time.After(10 * time.Second):
		t.Fatal("not delivered")
	}
}
