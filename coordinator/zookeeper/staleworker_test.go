package zookeeper_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A worker that crashed keeps its ZooKeeper worker node until its session
// expires (SessionTimeout, 10 s by default), while its presence entry, which
// DeleteTopic checks, is gone 3 s after the crash; DeleteTopic then removes
// the topic's ZooKeeper definition. The leader must go on assigning the
// other topics meanwhile. Here a worker node listing a deleted topic (its
// session alive, as a crashed worker's is until it expires) stands beside a
// live worker of another topic.
func TestWorkerOfADeletedTopicDoesNotStallTheLeader(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("stale-%d", time.Now().UnixNano())
	base := "/rmq-test/" + ns
	conn, _, err := zk.Connect(servers, 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	defer conn.Close()
	for _, p := range []string{"/rmq-test", base, base + "/workers"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			require.NoError(t, err)
		}
	}
	// The crashed worker's node: it consumed "gone", whose definition
	// DeleteTopic removed (it is not in topics/).
	_, err = conn.Create(base+"/workers/crashed", []byte(`{"id":"crashed","host":"h","pid":1,"topics":{"gone":1},"started":1}`),
		zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	shared := &sharedSlots{holders: map[int]int{}}
	z, err := zookeeper.New(zookeeper.Config{Servers: servers, SessionTimeout: 4 * time.Second, Root: "/rmq-test", WorkerID: "live"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	h := newHolder(shared)
	done := make(chan error, 1)
	go func() {
		done <- z.Run(ctx, coordinator.Member{Namespace: ns, DrainTimeout: time.Second, Topics: []coordinator.TopicThreads{
			{Topic: "kept", SlotAmount: 4, Threads: 1, Definition: `{"slotAmount":4,"type":"Priority"}`}}}, h)
	}()
	defer func() { cancel(); require.NoError(t, <-done) }()
	deadline := time.Now().Add(8 * time.Second)
	for h.valid() < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Equal(t, 4, h.valid(), "the only live worker of topic kept holds none of its 4 slots 8 s after it started")
}

// WorkerID "must be unique among live workers": a process that crashed and
// is restarted under the same configured id (a host or pod name) while the
// crashed session's worker node still waits to expire must join once that
// node is gone, not fail for good. Here the crashed process is a session
// that registered "fixed" and then lost its network (a proxy cut: its node
// lives until the session expires, 4 s later).
func TestRestartUnderTheSameWorkerIDJoins(t *testing.T) {
	t.Parallel()
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("restart-%d", time.Now().UnixNano())
	base := "/rmq-test/" + ns
	proxy := testenv.StartPartition(t, servers[0])
	crashed, _, err := zk.Connect([]string{proxy.Addr()}, 4*time.Second, zk.WithLogInfo(false))
	require.NoError(t, err)
	for _, p := range []string{"/rmq-test", base, base + "/workers"} {
		if _, err := crashed.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			require.NoError(t, err)
		}
	}
	_, err = crashed.Create(base+"/workers/fixed", []byte(`{"id":"fixed","topics":{"t":1}}`), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	proxy.Cut() // the process is gone; its session expires 4 s from now
	defer crashed.Close()

	z, err := zookeeper.New(zookeeper.Config{Servers: servers, SessionTimeout: 4 * time.Second, Root: "/rmq-test", WorkerID: "fixed"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	h := newHolder(&sharedSlots{holders: map[int]int{}})
	done := make(chan error, 1)
	go func() {
		done <- z.Run(ctx, coordinator.Member{Namespace: ns, DrainTimeout: time.Second, Topics: []coordinator.TopicThreads{
			{Topic: "t", SlotAmount: 4, Threads: 1, Definition: `{"slotAmount":4,"type":"Priority"}`}}}, h)
	}()
	deadline := time.After(15 * time.Second)
	for h.valid() < 4 {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("the restarted worker's Run ended instead of waiting for the crashed session's node: %v", err)
		case <-deadline:
			cancel()
			<-done
			t.Fatal("the restarted worker holds no slot 15 s after the start")
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	require.NoError(t, <-done)
}
