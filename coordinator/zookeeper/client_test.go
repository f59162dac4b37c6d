package zookeeper_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Tests of rmq clients coordinated by ZooKeeper.

// zkClient returns a client in namespace ns coordinated by the real
// ZooKeeper ensemble.
func zkClient(t *testing.T, b testenv.Backend, ns, worker string, opts ...rmq.Option) *rmq.Client {
	t.Helper()
	z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t),
		SessionTimeout: 4 * time.Second, Root: "/rmq-test", WorkerID: worker})
	require.NoError(t, err)
	t.Cleanup(func() { z.Close() })
	c, err := rmq.New(b.Redis, append([]rmq.Option{rmq.WithNamespace(ns), rmq.WithCoordinator(z)}, opts...)...)
	require.NoError(t, err)
	return c
}

// A listener still running when Close is called finishes as the owner: the
// graceful drain keeps the lease alive (up to the consume timeout).
func TestGracefulCloseKeepsOwnershipWhileDraining(t *testing.T) {
	t.Parallel()
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	c := zkClient(t, b, ns, "solo", rmq.WithConsumeTimeout(10*time.Second))
	ctx := context.Background()
	define(t, c, "t", 1, rmq.Priority)
	started := make(chan struct{}, 1)
	owned := make(chan bool, 1)
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		started <- struct{}{}
		time.Sleep(3 * time.Second) // longer than half the session timeout: the lease must be renewed meanwhile
		ok := rmq.Owned(ctx)
		owned <- ok
		if !ok {
			return rmq.ErrNotOwner
		}
		return nil
	})))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("m"), Priority: 100}))
	select {
	case <-started:
	case <-time.After(15 * time.Second):
		t.Fatal("the message was not delivered")
	}
	time.Sleep(100 * time.Millisecond)
	closeCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	require.NoError(t, c.Close(closeCtx))
	require.NoError(t, <-done)
	assert.True(t, <-owned, "a listener draining during a graceful Close saw Owned == false")
	st := stats(t, c, "t")
	assert.Equal(t, int64(0), st.Store+st.Prepare, "the message was committed")
}

// Two processes' worth of clients share the slots; every message is handled
// once per delivery by the slot's one owner.
func TestZooKeeperClientsShareSlots(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	a := zkClient(t, b, ns, "a")
	define(t, a, "t", 16, rmq.FixedTime)
	bb := zkClient(t, b, ns, "b")
	ra, rb := newRecorder(), newRecorder()
	require.NoError(t, a.Subscribe("t", ra, rmq.WithThreads(2)))
	require.NoError(t, bb.Subscribe("t", rb, rmq.WithThreads(2)))
	run(t, a)
	run(t, bb)
	admin, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), Root: "/rmq-test"})
	require.NoError(t, err)
	defer admin.Close()
	waitFor(t, 15*time.Second, "both workers hold their slots", func() bool {
		_, slots, err := admin.Assignment(ctx, ns, "t")
		require.NoError(t, err)
		held := map[string]int{}
		for _, s := range slots {
			if s.Holder == s.Assigned {
				held[s.Holder.Worker]++
			}
		}
		return held["a"] == 8 && held["b"] == 8
	})
	var msgs []rmq.OutgoingMessage
	for i := range 200 {
		msgs = append(msgs, rmq.FixedTimeMessage{Topic: "t", Content: []byte{byte(i), 'x'}, FixedTime: time.Now().Add(50 * time.Millisecond)})
	}
	require.NoError(t, a.Producer().SendBatch(ctx, msgs...))
	waitFor(t, 15*time.Second, "all consumed", func() bool { return len(ra.snapshot())+len(rb.snapshot()) >= 200 })
	slotsA, slotsB := map[int]bool{}, map[int]bool{}
	for _, slot := range ra.snapshot() {
		slotsA[slot] = true
	}
	for _, slot := range rb.snapshot() {
		slotsB[slot] = true
		assert.False(t, slotsA[slot], "slot %d consumed by both", slot)
	}
	assert.NotEmpty(t, slotsA)
	assert.NotEmpty(t, slotsB)
	assert.Equal(t, 16, len(slotsA)+len(slotsB))
}

// With ZooKeeper unreachable consumers do not consume, producers keep
// working, and Close still returns at once.
func TestZooKeeperDownStopsConsumersNotProducers(t *testing.T) {
	b := testenv.Mini(t)
	z, err := zookeeper.New(zookeeper.Config{Servers: []string{"127.0.0.1:1"},
		SessionTimeout: 2 * time.Second, WorkerID: "lonely"})
	require.NoError(t, err)
	ctx := context.Background()
	plain, err := rmq.New(b.Redis, rmq.WithNamespace("zkdown"))
	require.NoError(t, err)
	defer plain.Close(ctx)
	define(t, plain, "t", 4, rmq.Priority)
	c, err := rmq.New(b.Redis, rmq.WithNamespace("zkdown"), rmq.WithCoordinator(z))
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, c.DefineTopic(short, rmq.Topic{Name: "t", SlotAmount: 4, Type: rmq.Priority}), context.DeadlineExceeded,
		"recording a topic in ZooKeeper waits for a session, bounded by ctx")
	r := newRecorder()
	require.NoError(t, c.Subscribe("t", r))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("x"), Priority: 50}))
	time.Sleep(time.Second)
	assert.Empty(t, r.snapshot(), "consumed without a ZooKeeper session")
	assert.Equal(t, int64(1), stats(t, c, "t").Store)
	start := time.Now()
	require.NoError(t, c.Close(ctx))
	require.NoError(t, <-done)
	assert.Less(t, time.Since(start), 5*time.Second)
}

// A definition ZooKeeper holds that differs from Redis's fails DefineTopic
// and Start with rmq.ErrTopicConflict, the coordinator's conflict error
// itself, and names the topic.
func TestZooKeeperTopicConflictIsErrTopicConflict(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), SessionTimeout: 4 * time.Second, Root: "/rmq-test"})
	require.NoError(t, err)
	defer z.Close()
	for _, name := range []string{"defined", "started"} {
		require.NoError(t, z.RecordTopic(ctx, ns, name, `{"slotAmount":16,"type":"Priority"}`))
	}

	c := zkClient(t, b, ns, "w")
	err = c.DefineTopic(ctx, rmq.Topic{Name: "defined", SlotAmount: 8, Type: rmq.Priority})
	require.ErrorIs(t, err, rmq.ErrTopicConflict)
	assert.ErrorIs(t, err, coordinator.ErrTopicConflict)
	assert.Contains(t, err.Error(), `topic "defined"`)

	// Redis alone knows "started" as 8 slots; the worker finds 16 in ZooKeeper
	// when it joins, and Start fails.
	plain, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	defer plain.Close(ctx)
	define(t, plain, "started", 8, rmq.Priority)
	require.NoError(t, c.Subscribe("started", newRecorder()))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		require.NoError(t, c.Close(ctx))
		t.Fatal("Start went on with a conflicting topic")
	}
	assert.ErrorIs(t, err, rmq.ErrTopicConflict)
	assert.Contains(t, err.Error(), "topics/started")
	require.NoError(t, c.Close(ctx))
}

// define defines a topic or fails the test.
func define(t *testing.T, c *rmq.Client, name string, slots int, typ rmq.TopicType) {
	t.Helper()
	require.NoError(t, c.DefineTopic(context.Background(), rmq.Topic{Name: name, SlotAmount: slots, Type: typ}))
}

// stats reads the topic's stats or fails the test.
func stats(t *testing.T, c *rmq.Client, topic string) rmq.Stats {
	t.Helper()
	st, err := c.Stats(context.Background(), topic)
	require.NoError(t, err)
	return st
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

// recorder is a listener that records the slot of every delivery.
type recorder struct {
	mu    sync.Mutex
	slots []int
}

func newRecorder() *recorder { return &recorder{} }

func (r *recorder) OnMessage(_ context.Context, m *rmq.Message) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.slots = append(r.slots, m.Slot)
	return nil
}

// snapshot returns the slots of the deliveries so far.
func (r *recorder) snapshot() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int(nil), r.slots...)
}
