package rmq_test

// The client's own tests: New and its options, Subscribe, Start, Shutdown
// and Close.

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

func TestNewRejectsBadOptions(t *testing.T) {
	b := testenv.Mini(t)
	cases := []struct {
		name string
		opt  rmq.Option
		want error
	}{
		{"namespace empty", rmq.WithNamespace(""), rmq.ErrInvalidNamespace},
		{"namespace brace", rmq.WithNamespace("a}"), rmq.ErrInvalidNamespace},
		{"timeout short", rmq.WithConsumeTimeout(500 * time.Millisecond), rmq.ErrInvalidOption},
		{"nil backoff", rmq.WithRetryBackoff(nil), rmq.ErrInvalidOption},
		{"nil logger", rmq.WithLogger(nil), rmq.ErrInvalidOption},
		{"nil coordinator", rmq.WithCoordinator(nil), rmq.ErrInvalidOption},
		{"batch zero", rmq.WithBatchSize(0), rmq.ErrInvalidOption},
		{"batch huge", rmq.WithBatchSize(5000), rmq.ErrInvalidOption},
		{"idle poll", rmq.WithIdlePoll(time.Millisecond), rmq.ErrInvalidOption},
		{"idle sweep too short", rmq.WithIdleSweep(time.Millisecond), rmq.ErrInvalidOption},
		{"idle sweep too long", rmq.WithIdleSweep(11 * time.Minute), rmq.ErrInvalidOption},
		{"max content", rmq.WithMaxContentSize(0), rmq.ErrInvalidOption},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := rmq.New(b.Redis, tc.opt)
			assert.ErrorIs(t, err, tc.want)
			assert.Nil(t, c)
		})
	}
	_, err := rmq.New(nil)
	assert.ErrorIs(t, err, rmq.ErrInvalidOption)
}

func TestSubscribeRejectsBadInput(t *testing.T) {
	b := testenv.Mini(t)
	c := newClient(t, b)
	define(t, c, "t", 4, rmq.Priority)
	l := rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return nil })
	assert.ErrorIs(t, c.Subscribe("t", nil), rmq.ErrNilListener)
	// An unset ListenerFunc or a nil pointer behind the interface: every
	// call would panic, and every message of the topic go to dead.
	var unset rmq.ListenerFunc
	assert.ErrorIs(t, c.Subscribe("t", unset), rmq.ErrNilListener)
	assert.ErrorIs(t, c.Subscribe("t", (*recorder)(nil)), rmq.ErrNilListener)
	define(t, c, "chain", 4, rmq.Priority)
	assert.NoError(t, c.Subscribe("chain", listenerChain(nil)), "a nil slice type serves (its method ranges over it)")
	assert.ErrorIs(t, c.Subscribe("nope", l), rmq.ErrUnknownTopic)
	assert.ErrorIs(t, c.Subscribe("t", l, rmq.WithThreads(0)), rmq.ErrInvalidOption)
	require.NoError(t, c.Subscribe("t", l, rmq.WithThreads(2)))
	assert.ErrorIs(t, c.Subscribe("t", l), rmq.ErrAlreadySubscribed)
	define(t, c, "u", 4, rmq.Priority)
	run(t, c)
	eventually(t, time.Second, "Subscribe after Start fails", func() bool {
		return errors.Is(c.Subscribe("u", l), rmq.ErrStarted)
	})
	assert.ErrorIs(t, c.Start(context.Background()), rmq.ErrStarted)
}

func TestClosedClientRefusesWork(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "t", 4, rmq.Priority)
	require.NoError(t, c.Close(ctx))
	require.NoError(t, c.Close(ctx), "Close is idempotent")
	assert.ErrorIs(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("x"), Priority: 20}), rmq.ErrClosed)
	assert.ErrorIs(t, c.Start(ctx), rmq.ErrClosed)
}

func TestNilOptionsAreSkipped(t *testing.T) {
	b := testenv.Mini(t)
	c, err := rmq.New(b.Redis, nil, rmq.WithNamespace(testenv.Namespace(t, b)), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	define(t, c, "t", 4, rmq.Priority)
	l := rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return nil })
	assert.NoError(t, c.Subscribe("t", l, nil, rmq.WithThreads(2), nil))
}

// blockingTopic subscribes a listener to a new one-slot Priority topic that
// signals its first call on entered and then blocks until release is closed,
// recording what its context said.
type blockingTopic struct {
	entered  chan struct{}
	release  chan struct{}
	deadline atomic.Int64 // ns until the listener ctx's deadline, at the call
	canceled atomic.Bool  // the listener ctx was cancelled while it blocked
	calls    atomic.Int32
}

func subscribeBlocking(t *testing.T, c *rmq.Client, topic string) *blockingTopic {
	t.Helper()
	define(t, c, topic, 1, rmq.Priority)
	bt := &blockingTopic{entered: make(chan struct{}), release: make(chan struct{})}
	require.NoError(t, c.Subscribe(topic, rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		if bt.calls.Add(1) > 1 {
			return nil
		}
		if d, ok := ctx.Deadline(); ok {
			bt.deadline.Store(int64(time.Until(d)))
		}
		close(bt.entered)
		select {
		case <-bt.release:
		case <-ctx.Done():
			bt.canceled.Store(true)
			<-bt.release
		}
		return nil
	})))
	return bt
}

func TestListenerContextHasTheConsumeTimeoutAsDeadline(t *testing.T) {
	b := testenv.Mini(t)
	c := newClient(t, b, rmq.WithConsumeTimeout(7*time.Second))
	bt := subscribeBlocking(t, c, "t")
	run(t, c)
	require.NoError(t, c.Producer().Send(context.Background(), rmq.PriorityMessage{Topic: "t", Content: []byte("m"), Priority: 20}))
	<-bt.entered
	close(bt.release)
	d := time.Duration(bt.deadline.Load())
	assert.LessOrEqual(t, d, 7*time.Second)
	assert.Greater(t, d, 6*time.Second, "the deadline is the consume timeout after the pop")
}

func TestShutdownStopsConsumingWhileTheProducerWorks(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		rec := newRecorder()
		define(t, c, "t", 4, rmq.Priority)
		require.NoError(t, c.Subscribe("t", rec, rmq.WithThreads(2)))
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("before"), Priority: 20}))
		rec.waitCalls(t, 1, 5*time.Second)

		require.NoError(t, c.Shutdown(ctx))
		require.NoError(t, <-done, "Start returns once consumption has ended")
		require.NoError(t, c.Shutdown(ctx), "Shutdown is idempotent")
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("after"), Priority: 20}),
			"the producer keeps working")
		time.Sleep(100 * time.Millisecond)
		assert.Equal(t, []string{"before"}, rec.contents(), "nothing is consumed after Shutdown")
		assert.Equal(t, int64(1), stats(t, c, "t").Store)
		assert.ErrorIs(t, c.Start(ctx), rmq.ErrClosed)
		assert.ErrorIs(t, c.Subscribe("t", rec), rmq.ErrClosed)

		require.NoError(t, c.Close(ctx))
		assert.ErrorIs(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("closed"), Priority: 20}), rmq.ErrClosed)
	})
}

func TestShutdownBeforeStartForbidsStarting(t *testing.T) {
	b := testenv.Mini(t)
	c := newClient(t, b)
	require.NoError(t, c.Shutdown(context.Background()))
	assert.ErrorIs(t, c.Start(context.Background()), rmq.ErrClosed)
}

func TestShutdownWaitsForTheListenerInHand(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	c := newClient(t, b)
	bt := subscribeBlocking(t, c, "t")
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("m"), Priority: 20}))
	<-bt.entered
	shut := make(chan error, 1)
	go func() { shut <- c.Shutdown(ctx) }()
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v while the listener was running", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(bt.release)
	require.NoError(t, <-shut)
	require.NoError(t, <-done)
	assert.False(t, bt.canceled.Load(), "a graceful shutdown does not cancel the listener")
	st := stats(t, c, "t")
	assert.Zero(t, st.Prepare+st.Store, "the message was committed before Shutdown returned")
}

// TestCloseWhoseContextEndsLeavesRedisAlone checks that Close, when its ctx
// ends while a listener ignores its own, returns ctx.Err() at once, and that
// nothing of the client touches Redis afterwards: the listener's outcome is
// never settled, so the delivery stays in prepare for the consume timeout.
func TestCloseWhoseContextEndsLeavesRedisAlone(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		bt := subscribeBlocking(t, c, "t")
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("m"), Priority: 20}))
		<-bt.entered

		closeCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		began := time.Now()
		err := c.Close(closeCtx)
		assert.True(t, errors.Is(err, context.DeadlineExceeded), "Close returned %v", err)
		assert.Less(t, time.Since(began), 2*time.Second, "Close waited for the listener")
		eventually(t, time.Second, "the listener's context is cancelled", bt.canceled.Load)

		close(bt.release) // the listener returns now; its thread must not settle it
		require.NoError(t, <-done)
		st := stats(t, c, "t")
		assert.Equal(t, int64(1), st.Prepare, "the outcome was settled after Close returned")
	})
}

// listenerChain calls each of its listeners in turn; a nil one commits.
type listenerChain []rmq.MessageListener

func (c listenerChain) OnMessage(ctx context.Context, m *rmq.Message) error {
	for _, l := range c {
		if err := l.OnMessage(ctx, m); err != nil {
			return err
		}
	}
	return nil
}
