package rmq_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A half-open breaker's probe whose listener gives the message back
// (ErrNotOwner: no outcome, no retry spent) ends the probe: the next pop
// probes again, the probes succeed and the breaker closes. (It stayed "in
// flight" for good, and the topic was never consumed again here.)
func TestBreakerProbeGivenBackProbesAgain(t *testing.T) {
	b := testenv.Single(t)
	ctx := context.Background()
	c := newClient(t, b, rmq.WithRetryBackoff(rmq.NoBackoff))
	define(t, c, "brk", 1, rmq.Priority)
	var calls atomic.Int64
	r := newRecorder()
	r.fail = func(m *rmq.Message) error {
		switch calls.Add(1) {
		case 1:
			return errBoom // opens the breaker (MinCalls 1)
		case 2:
			return rmq.ErrNotOwner // the half-open probe is handed back
		}
		return nil
	}
	require.NoError(t, c.Subscribe("brk", r, rmq.WithBreaker(rmq.Breaker{FailureRatio: 0.5, MinCalls: 1, OpenFor: 200 * time.Millisecond})))
	run(t, c)
	p := c.Producer()
	require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "brk", Content: []byte("first"), Priority: 50}))
	r.waitCalls(t, 1, 10*time.Second)
	eventually(t, 2*time.Second, "breaker open", func() bool { return topicMetrics(c, "brk").Breaker == rmq.BreakerOpen })
	for i := range 3 {
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "brk", Content: fmt.Appendf(nil, "m%d", i), Priority: 100}))
	}
	r.waitCalls(t, 2, 5*time.Second) // the probe, given back
	// The next probes succeed, the breaker closes, and the three
	// messages and "first" are delivered: 4 more calls well within 5 s.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && len(r.snapshot()) < 6 {
		time.Sleep(50 * time.Millisecond)
	}
	m := topicMetrics(c, "brk")
	st := stats(t, c, "brk")
	assert.GreaterOrEqual(t, len(r.snapshot()), 6, "listener calls after the probe was given back: %v; breaker %s, held back %v, store %d",
		r.contents(), m.Breaker, m.HeldBack, st.Store)
}
