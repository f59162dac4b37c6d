package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// holder is a Handler that holds leases and releases revoked ones at once,
// recording how many holders each slot had at any moment.
type holder struct {
	mu       sync.Mutex
	held     map[int]*coordinator.Lease
	overlaps *sharedSlots
}

// sharedSlots counts live holders per slot across workers.
type sharedSlots struct {
	mu      sync.Mutex
	holders map[int]int
	worst   int
}

func (s *sharedSlots) add(slot, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holders[slot] += d
	s.worst = max(s.worst, s.holders[slot])
}

func (s *sharedSlots) worstSeen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.worst
}

func newHolder(shared *sharedSlots) *holder {
	return &holder{held: map[int]*coordinator.Lease{}, overlaps: shared}
}

func (h *holder) Assigned(l *coordinator.Lease) {
	h.mu.Lock()
	h.held[l.Slot()] = l
	h.mu.Unlock()
	h.overlaps.add(l.Slot(), 1)
}

func (h *holder) Revoked(l *coordinator.Lease) {
	go func() {
		h.mu.Lock()
		if h.held[l.Slot()] == l {
			delete(h.held, l.Slot())
			h.overlaps.add(l.Slot(), -1)
		}
		h.mu.Unlock()
		l.Release()
	}()
}

// valid counts held leases that are valid now.
func (h *holder) valid() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.held {
		if l.Valid() {
			n++
		}
	}
	return n
}

type worker struct {
	h    *holder
	stop context.CancelFunc
	done chan struct{} // closed when Run returned, with err set
	err  error
}

func startWorker(t *testing.T, servers []string, ns, id string, threads int, shared *sharedSlots) *worker {
	t.Helper()
	return startWorkerOf(t, servers, ns, id, threads, 16, shared)
}

// startWorkerOf runs a worker of topic "t" of the given number of slots.
func startWorkerOf(t *testing.T, servers []string, ns, id string, threads, slots int, shared *sharedSlots) *worker {
	t.Helper()
	return startWorkerWith(t, servers, ns, id, threads, slots, shared, nil)
}

// startWorkerWith runs a worker of topic "t" that declines what declines
// holds (nil: nothing).
func startWorkerWith(t *testing.T, servers []string, ns, id string, threads, slots int, shared *sharedSlots,
	declines *coordinator.Declines) *worker {
	t.Helper()
	return startWorkerSession(t, servers, ns, id, threads, slots, shared, declines, 4*time.Second)
}

// startWorkerSession is startWorkerWith with a session timeout of its own.
func startWorkerSession(t *testing.T, servers []string, ns, id string, threads, slots int, shared *sharedSlots,
	declines *coordinator.Declines, session time.Duration) *worker {
	t.Helper()
	z, err := zookeeper.New(zookeeper.Config{
		Servers: servers, SessionTimeout: session, Root: "/rmq-test", WorkerID: id})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{h: newHolder(shared), stop: cancel, done: make(chan struct{})}
	m := coordinator.Member{Namespace: ns, DrainTimeout: 5 * time.Second, Declines: declines, Topics: []coordinator.TopicThreads{
		{Topic: "t", SlotAmount: slots, Threads: threads, Definition: fmt.Sprintf(`{"slotAmount":%d,"type":"Priority"}`, slots)}}}
	go func() { w.err = z.Run(ctx, m, w.h); close(w.done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(15 * time.Second):
			t.Errorf("worker %s did not stop", id)
		}
	})
	return w
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

func TestZooKeeperSplitsSlotsAndHandsThemOver(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("split-%d", time.Now().UnixNano())
	shared := &sharedSlots{holders: map[int]int{}}
	a := startWorker(t, servers, ns, "a", 2, shared)
	waitFor(t, 10*time.Second, "a holds all 16 slots", func() bool { return a.h.valid() == 16 })

	b := startWorker(t, servers, ns, "b", 2, shared)
	took := waitFor(t, 10*time.Second, "a and b hold 8 each", func() bool { return a.h.valid() == 8 && b.h.valid() == 8 })
	t.Logf("rebalance after join: %v", took)

	a.stop()
	<-a.done
	require.NoError(t, a.err)
	took = waitFor(t, 10*time.Second, "b holds all 16 slots", func() bool { return b.h.valid() == 16 })
	t.Logf("rebalance after graceful leave: %v", took)
	assert.Equal(t, 1, shared.worstSeen(), "a slot had two holders at once")
}

// A worker holding many slots keeps no goroutine per slot: it learns of a
// release through Grant.AfterRelease.
func TestZooKeeperHeldSlotsCostNoGoroutineEach(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("many-%d", time.Now().UnixNano())
	const slots = 512
	before := runtime.NumGoroutine()
	a := startWorkerOf(t, servers, ns, "a", 2, slots, &sharedSlots{holders: map[int]int{}})
	waitFor(t, 30*time.Second, "a holds every slot", func() bool { return a.h.valid() == slots })
	time.Sleep(200 * time.Millisecond)
	grown := runtime.NumGoroutine() - before
	assert.Less(t, grown, slots/8, "goroutines added while holding %d slots", slots)
	t.Logf("goroutines added: %d for %d slots", grown, slots)
}

func TestZooKeeperRejectsConflictingTopic(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("conflict-%d", time.Now().UnixNano())
	z, err := zookeeper.New(zookeeper.Config{Servers: servers, SessionTimeout: 4 * time.Second, Root: "/rmq-test"})
	require.NoError(t, err)
	defer z.Close()
	ctx := context.Background()
	require.NoError(t, z.RecordTopic(ctx, ns, "t", `{"slotAmount":16,"type":"Priority"}`))
	require.NoError(t, z.RecordTopic(ctx, ns, "t", `{"type":"Priority","slotAmount":16}`))
	assert.ErrorIs(t, z.RecordTopic(ctx, ns, "t", `{"slotAmount":8,"type":"Priority"}`), coordinator.ErrTopicConflict)
	m := coordinator.Member{Namespace: ns, Topics: []coordinator.TopicThreads{
		{Topic: "t", SlotAmount: 8, Threads: 1, Definition: `{"slotAmount":8,"type":"Priority"}`}}}
	err = z.Run(ctx, m, newHolder(&sharedSlots{holders: map[int]int{}}))
	assert.ErrorIs(t, err, coordinator.ErrTopicConflict)
}

func TestZooKeeperAdminReads(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("admin-%d", time.Now().UnixNano())
	shared := &sharedSlots{holders: map[int]int{}}
	a := startWorker(t, servers, ns, "a", 2, shared)
	waitFor(t, 10*time.Second, "a holds all slots", func() bool { return a.h.valid() == 16 })
	z, err := zookeeper.New(zookeeper.Config{Servers: servers, Root: "/rmq-test"})
	require.NoError(t, err)
	defer z.Close()
	ctx := context.Background()
	ws, err := z.Workers(ctx, ns)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	assert.Equal(t, "a", ws[0].ID)
	assert.True(t, ws[0].Leader)
	assert.Equal(t, map[string]int{"t": 2}, ws[0].Topics)
	gen, slots, err := z.Assignment(ctx, ns, "t")
	require.NoError(t, err)
	assert.Positive(t, gen)
	require.Len(t, slots, 16)
	for _, s := range slots {
		assert.Equal(t, "a", s.Assigned.Worker)
		assert.Equal(t, s.Assigned, s.Holder)
		assert.Positive(t, s.Token)
	}
}

func TestZooKeeperAuthNeverCreatesWorldWritableNodes(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("auth-%d", time.Now().UnixNano())
	root := "/rmq-auth"
	auth := &zookeeper.DigestAuth{User: "rmq", Password: "s3cret"}
	_, err := zookeeper.New(zookeeper.Config{Servers: servers, Auth: auth,
		ACL: zk.WorldACL(zk.PermAll)})
	require.ErrorIs(t, err, zookeeper.ErrInvalidConfig, "a world-writable ACL with auth")

	z, err := zookeeper.New(zookeeper.Config{Servers: servers, Root: root,
		SessionTimeout: 4 * time.Second, Auth: auth, WorkerID: "secure"})
	require.NoError(t, err)
	defer z.Close()
	ctx, cancel := context.WithCancel(context.Background())
	h := newHolder(&sharedSlots{holders: map[int]int{}})
	done := make(chan error, 1)
	go func() {
		done <- z.Run(ctx, coordinator.Member{Namespace: ns, DrainTimeout: time.Second, Topics: []coordinator.TopicThreads{
			{Topic: "t", SlotAmount: 4, Threads: 1, Definition: `{"slotAmount":4,"type":"Priority"}`}}}, h)
	}()
	waitFor(t, 10*time.Second, "slots held", func() bool { return h.valid() == 4 })

	// Every node under the namespace: no ACL lets the world write.
	conn, _, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.AddAuth("digest", []byte("rmq:s3cret")))
	stranger, _, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer stranger.Close()
	var walk func(path string)
	checked := 0
	walk = func(path string) {
		acl, _, err := conn.GetACL(path)
		require.NoError(t, err, path)
		for _, a := range acl {
			assert.False(t, a.Scheme == "world" && a.Perms&^zk.PermRead != 0, "%s is world-writable: %+v", path, a)
		}
		checked++
		children, _, err := conn.Children(path)
		if errors.Is(err, zk.ErrNoAuth) {
			return
		}
		require.NoError(t, err, path)
		for _, c := range children {
			walk(path + "/" + c)
		}
	}
	walk(root + "/" + ns)
	assert.Greater(t, checked, 8)
	_, _, err = stranger.Get(root + "/" + ns + "/topics/t")
	assert.ErrorIs(t, err, zk.ErrNoAuth, "a stranger cannot read")
	_, err = stranger.Set(root+"/"+ns+"/topics/t", []byte("{}"), -1)
	assert.ErrorIs(t, err, zk.ErrNoAuth, "a stranger cannot write")
	t.Logf("checked %d nodes", checked)
	cancel()
	require.NoError(t, <-done)
}

// stubborn holds its leases and never releases them.
type stubborn struct {
	mu   sync.Mutex
	held []*coordinator.Lease
}

func (h *stubborn) Assigned(l *coordinator.Lease) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = append(h.held, l)
}

func (h *stubborn) Revoked(*coordinator.Lease) {}

// leases returns the leases handed out so far and how many are valid.
func (h *stubborn) leases() ([]*coordinator.Lease, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, l := range h.held {
		if l.Valid() {
			n++
		}
	}
	return append([]*coordinator.Lease(nil), h.held...), n
}

// runStubborn runs a worker whose threads never release, until stop; Run's
// result arrives on the returned channel.
func runStubborn(t *testing.T, m coordinator.Member) (h *stubborn, stop context.CancelFunc, done <-chan error) {
	t.Helper()
	z, err := zookeeper.New(zookeeper.Config{Servers: testenv.ZooKeeper(t), SessionTimeout: 4 * time.Second,
		Root: "/rmq-test", WorkerID: "stubborn"})
	require.NoError(t, err)
	assert.Equal(t, "zookeeper", z.Kind())
	h = &stubborn{}
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- z.Run(ctx, m, h) }()
	t.Cleanup(cancel)
	waitFor(t, 10*time.Second, "all 4 slots held", func() bool { _, n := h.leases(); return n == 4 })
	return h, cancel, ch
}

func assertAllLost(t *testing.T, h *stubborn) {
	t.Helper()
	leases, valid := h.leases()
	assert.Zero(t, valid)
	for _, l := range leases {
		assert.ErrorIs(t, context.Cause(l.Context()), coordinator.ErrLeaseLost, "slot %d", l.Slot())
	}
}

// Leaving, a worker waits for its threads' releases up to the drain timeout
// in all, then takes every lease still out away.
func TestZooKeeperLeaveTakesLeasesAwayAfterTheDrainTimeout(t *testing.T) {
	ns := fmt.Sprintf("drain-%d", time.Now().UnixNano())
	m := coordinator.Member{Namespace: ns, DrainTimeout: time.Second, Topics: []coordinator.TopicThreads{
		{Topic: "t", SlotAmount: 4, Threads: 2, Definition: `{"slotAmount":4,"type":"Priority"}`}}}
	h, stop, done := runStubborn(t, m)
	start := time.Now()
	stop()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return: it waited for releases past the drain timeout")
	}
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, m.DrainTimeout, "the threads had the drain timeout to release")
	t.Logf("left %v after the stop (drain timeout %v)", took, m.DrainTimeout)
	assertAllLost(t, h)
}

// When the client abandons its listeners, a leaving worker stops waiting for
// releases at once.
func TestZooKeeperAbandonedTakesLeasesAwayAtOnce(t *testing.T) {
	ns := fmt.Sprintf("abandon-%d", time.Now().UnixNano())
	abandoned := make(chan struct{})
	m := coordinator.Member{Namespace: ns, DrainTimeout: time.Minute, Abandoned: abandoned, Topics: []coordinator.TopicThreads{
		{Topic: "t", SlotAmount: 4, Threads: 2, Definition: `{"slotAmount":4,"type":"Priority"}`}}}
	h, stop, done := runStubborn(t, m)
	stop()
	time.Sleep(100 * time.Millisecond) // leaving, waiting for releases
	start := time.Now()
	close(abandoned)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the client abandoned its listeners")
	}
	t.Logf("returned %v after the abandon (drain timeout %v)", time.Since(start), m.DrainTimeout)
	assertAllLost(t, h)
}
