package rmq_test

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// newClient returns a client in a namespace of its own on b, closed when the
// test ends.
func newClient(t *testing.T, b testenv.Backend, opts ...rmq.Option) *rmq.Client {
	t.Helper()
	opts = append([]rmq.Option{rmq.WithNamespace(testenv.Namespace(t, b))}, opts...)
	c, err := rmq.New(b.Redis, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// define defines a topic or fails the test.
func define(t *testing.T, c *rmq.Client, name string, slots int, typ rmq.TopicType) {
	t.Helper()
	require.NoError(t, c.DefineTopic(context.Background(), rmq.Topic{Name: name, SlotAmount: slots, Type: typ}))
}

// run starts c in the background; the test's cleanup closes it and checks
// that Start returned nil.
func run(t *testing.T, c *rmq.Client) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Start(context.Background()) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, c.Close(ctx))
		require.NoError(t, <-done)
	})
}

// delivery is one listener call.
type delivery struct {
	content string
	msg     rmq.Message
	at      time.Time
}

// recorder is a listener that records deliveries and fails as told.
type recorder struct {
	mu    sync.Mutex
	calls []delivery
	fail  func(m *rmq.Message) error // nil: succeed
	seen  chan struct{}
}

func newRecorder() *recorder { return &recorder{seen: make(chan struct{}, 1<<16)} }

func (r *recorder) OnMessage(_ context.Context, m *rmq.Message) error {
	r.mu.Lock()
	r.calls = append(r.calls, delivery{content: string(m.Content), msg: *m, at: time.Now()})
	fail := r.fail
	r.mu.Unlock()
	r.seen <- struct{}{}
	if fail != nil {
		return fail(m)
	}
	return nil
}

func (r *recorder) snapshot() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.calls...)
}

func (r *recorder) contents() []string {
	var out []string
	for _, d := range r.snapshot() {
		out = append(out, d.content)
	}
	return out
}

// waitCalls waits until the recorder has seen n calls.
func (r *recorder) waitCalls(t *testing.T, n int, within time.Duration) []delivery {
	t.Helper()
	deadline := time.After(within)
	for {
		if calls := r.snapshot(); len(calls) >= n {
			return calls
		}
		select {
		case <-r.seen:
		case <-deadline:
			t.Fatalf("saw %d listener calls, want %d within %v: %v", len(r.snapshot()), n, within, r.contents())
		}
	}
}

// eventually polls cond until it holds or within passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// awaitHeld waits until every one of topic's slots has a holder (the last
// slot's holder is set once all are assigned), then lets settle pass, in
// which each slot looks once and, empty, parks.
func awaitHeld(t *testing.T, c *rmq.Client, topic string, slots int, settle time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		o, err := c.Owners(context.Background(), topic)
		return err == nil && len(o) == slots && o[slots-1].Holder != ""
	}, 10*time.Second, 10*time.Millisecond)
	time.Sleep(settle)
}

// stats reads the topic's stats or fails the test.
func stats(t *testing.T, c *rmq.Client, topic string) rmq.Stats {
	t.Helper()
	st, err := c.Stats(context.Background(), topic)
	require.NoError(t, err)
	return st
}

// debugLogger logs to stderr when RMQ_DEBUG_LOG is set, and discards otherwise.
func debugLogger() *slog.Logger {
	if os.Getenv("RMQ_DEBUG_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// newClientIn is newClient in a given namespace.
func newClientIn(t *testing.T, b testenv.Backend, ns string, opts ...rmq.Option) *rmq.Client {
	t.Helper()
	c, err := rmq.New(b.Redis, append([]rmq.Option{rmq.WithNamespace(ns)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

func mustNextDue(t *testing.T, c *rmq.Client, topic string, slots int) []rmq.PendingMessage {
	t.Helper()
	var out []rmq.PendingMessage
	for s := range slots {
		p, err := c.NextDue(context.Background(), topic, s, 1000)
		require.NoError(t, err)
		out = append(out, p...)
	}
	return out
}

// slowCall is a client's listener call in hand, the client reaching Redis
// through a partition of its own (slowCallThroughPartition).
type slowCall struct {
	c          *rmq.Client
	part       *testenv.Partition
	ownedAtEnd chan bool  // Owned(ctx) when the call ended
	done       chan error // Start's result
}

// slowCallThroughPartition starts a client of ns (with opts) that reaches b
// through a partition of its own, subscribed to topic "t" (1 slot) with a
// listener that takes hold, sends it a message, and returns once the call
// began.
func slowCallThroughPartition(t *testing.T, b testenv.Backend, ns string, hold time.Duration, opts ...rmq.Option) *slowCall {
	t.Helper()
	ctx := context.Background()
	part := testenv.StartPartition(t, b.Redis.(*redis.Client).Options().Addr)
	through := redis.NewClient(&redis.Options{Addr: part.Addr(), MaxRetries: -1, ReadTimeout: 500 * time.Millisecond,
		DialTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { through.Close() })
	c, err := rmq.New(through, append([]rmq.Option{rmq.WithNamespace(ns)}, opts...)...)
	require.NoError(t, err)
	define(t, c, "t", 1, rmq.Priority)
	sc := &slowCall{c: c, part: part, ownedAtEnd: make(chan bool, 1), done: make(chan error, 1)}
	started := make(chan struct{}, 1)
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		started <- struct{}{}
		time.Sleep(hold)
		sc.ownedAtEnd <- rmq.Owned(ctx)
		return nil
	})))
	go func() { sc.done <- c.Start(ctx) }()
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("slow"), Priority: 20}))
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow call did not start")
	}
	return sc
}
