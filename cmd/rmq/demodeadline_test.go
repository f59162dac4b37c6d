package main

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A step the deadline cuts short while it calls Redis (a Send under way)
// says that the scenario ran out of time, as a step that waits does, where
// it said only "context deadline exceeded".
func TestDemoDeadlineNamedWhenItCutsACallShort(t *testing.T) {
	t.Parallel()
	silent := testenv.FakeServer(t, func(net.Conn, *bufio.Reader) {}) // accepts, never answers
	r := redis.NewClient(&redis.Options{Addr: silent, ReadTimeout: 300 * time.Millisecond, MaxRetries: -1})
	defer r.Close()
	c, err := rmq.New(r, rmq.WithNamespace("demo"))
	require.NoError(t, err)
	var out syncBuffer
	err = playWithin(context.Background(), newScenario(c, newPrinter(&out)), 100*time.Millisecond)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the scenario did not complete within 100ms")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = c.Close(ctx) // its Redis answers nothing: only that it ends counts
}

// A scenario that ends while the warm-up job holds the jobs consumer (the
// user pressed Ctrl-C, or the deadline passed) lets that job end, so the
// demo stops at once, where Close waited out its 10 s for the job and
// failed.
func TestDemoEndedDuringTheWarmUpStopsAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := syncBuffer{onWrite: func(s string) {
		if strings.Contains(s, "holds the consumer while the other jobs arrive") {
			cancel() // before the other jobs are sent
		}
	}}
	start := time.Now()
	err := runDemo(ctx, newPrinter(&out), demoConfig{deadline: 40 * time.Second})
	took := time.Since(start)
	t.Logf("the demo stopped %v after it started: %v", took.Round(time.Millisecond), err)
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, context.DeadlineExceeded, "Close ran out of time waiting for the warm-up job")
	assert.Less(t, took, 8*time.Second)
}
