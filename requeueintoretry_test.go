package rmq_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// RequeueDead of a content whose newer copy waits out a retry backoff
// merges the two, with fresh retries, at the retry's due time: one delivery
// with 16 retries left. The requeue wrote only store, so on a RangeMerge
// topic the retry merged into it keeping its own 15 retries (one delivery
// fewer than promised before dead), and on the others the content came
// twice.
func TestRequeueDeadMergesWithACopyWaitingToRetry(t *testing.T) {
	t.Parallel() // mostly waiting
	for _, typ := range []rmq.TopicType{rmq.RangeMerge, rmq.Priority, rmq.FixedTime} {
		t.Run(typ.String(), func(t *testing.T) {
			t.Parallel()
			b := testenv.Single(t)
			ctx := context.Background()
			ns := testenv.Namespace(t, b)
			send := func(c *rmq.Client) {
				var m rmq.OutgoingMessage
				switch typ {
				case rmq.RangeMerge:
					m = rmq.RangeMergeMessage{Topic: "t", Content: []byte("x"), TimeRange: time.Millisecond}
				case rmq.Priority:
					m = rmq.PriorityMessage{Topic: "t", Content: []byte("x"), Priority: 50}
				default:
					m = rmq.FixedTimeMessage{Topic: "t", Content: []byte("x"), FixedTime: time.Now().Add(time.Millisecond)}
				}
				require.NoError(t, c.Producer().Send(ctx, m))
			}
			// Phase 1: x dies (no backoff).
			c1, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithRetryBackoff(func(int) time.Duration { return 0 }))
			require.NoError(t, err)
			define(t, c1, "t", 1, typ)
			require.NoError(t, c1.Subscribe("t", rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return errors.New("fail") })))
			done := make(chan error, 1)
			go func() { done <- c1.Start(ctx) }()
			send(c1)
			deadline := time.Now().Add(15 * time.Second)
			for {
				st, err := c1.Stats(ctx, "t")
				require.NoError(t, err)
				if st.Dead == 1 {
					break
				}
				require.True(t, time.Now().Before(deadline), "x never died: %+v", st)
				time.Sleep(20 * time.Millisecond)
			}
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			require.NoError(t, c1.Close(cctx))
			cancel()
			require.NoError(t, <-done)

			// Phase 2: a new copy of x fails once and waits out a 2 s backoff.
			var mu sync.Mutex
			var got []rmq.Message
			c2, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithRetryBackoff(func(int) time.Duration { return 2 * time.Second }))
			require.NoError(t, err)
			require.NoError(t, c2.Subscribe("t", rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, *m)
				if len(got) == 1 {
					return errors.New("fail once")
				}
				return nil
			})))
			run(t, c2)
			send(c2)
			deadline = time.Now().Add(10 * time.Second)
			for {
				st, err := c2.Stats(ctx, "t")
				require.NoError(t, err)
				if st.Retry == 1 {
					break
				}
				require.True(t, time.Now().Before(deadline), "x never went to retry: %+v", st)
				time.Sleep(10 * time.Millisecond)
			}
			n, err := c2.RequeueDead(ctx, "t")
			require.NoError(t, err)
			require.EqualValues(t, 1, n)
			pend, err := c2.NextDue(ctx, "t", 0, 10)
			require.NoError(t, err)
			for _, p := range pend {
				t.Logf("pending after requeue: %q retries %d retrying %v due %v", p.Content, p.RetriesLeft, p.Retrying, p.Due)
			}
			deadline = time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				n := len(got)
				mu.Unlock()
				if n >= 2 || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(3 * time.Second) // any further delivery
			mu.Lock()
			defer mu.Unlock()
			for i, m := range got {
				t.Logf("delivery %d: retriesLeft %d attempt %d", i, m.RetriesLeft, m.Attempt)
			}
			require.Len(t, got, 2, "the requeued content and its copy waiting to retry are one message")
			require.Equal(t, rmq.MaxRetries, got[1].RetriesLeft,
				"the requeued dead content merged with its copy waiting in retry must come with fresh retries")
		})
	}
}
