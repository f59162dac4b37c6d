package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// NextDue lists a slot's messages "in the order the slot's consumer takes
// them". A retry whose backoff is over and a fresh message due before it
// (both overdue, the consumer away): the listing and the consumer must agree.
func TestNextDueOrderMatchesConsumerWithOverdueRetry(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		c1, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithRetryBackoff(rmq.SteppedBackoff(time.Second)))
		require.NoError(t, err)
		define(t, c1, "ft", 1, rmq.FixedTime)
		r1 := newRecorder()
		r1.fail = func(*rmq.Message) error { return errBoom }
		require.NoError(t, c1.Subscribe("ft", r1))
		done := make(chan error, 1)
		go func() { done <- c1.Start(ctx) }()
		p := c1.Producer()
		require.NoError(t, p.Send(ctx, rmq.FixedTimeMessage{Topic: "ft", Content: []byte("A"), FixedTime: time.Now().Add(20 * time.Millisecond)}))
		r1.waitCalls(t, 1, 5*time.Second)
		eventually(t, 5*time.Second, "A waits for its retry", func() bool { return stats(t, c1, "ft").Retry == 1 })
		require.NoError(t, c1.Close(ctx))
		require.NoError(t, <-done)

		c2 := newClientIn(t, b, ns)
		require.NoError(t, c2.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "ft", Content: []byte("B"), FixedTime: time.Now().Add(20 * time.Millisecond)}))
		time.Sleep(1500 * time.Millisecond) // both overdue
		pending, err := c2.NextDue(ctx, "ft", 0, 10)
		require.NoError(t, err)
		var listed []string
		for _, m := range pending {
			listed = append(listed, string(m.Content))
		}
		r2 := newRecorder()
		require.NoError(t, c2.Subscribe("ft", r2))
		run(t, c2)
		r2.waitCalls(t, 2, 5*time.Second)
		require.Equal(t, r2.contents(), listed, "NextDue's order against the consumer's")
	})
}
