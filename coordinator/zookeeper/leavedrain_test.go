package zookeeper_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A leader that leaves gives the lead up before it drains: a worker joining
// meanwhile is assigned its share within a few ZooKeeper round trips
// (README: "graceful join or leave — the in-flight listener plus a few
// ZooKeeper round trips"), not once the leader's unrelated listener ends.
// Here the leader consumes topic "a" (a listener that never ends), b serves
// every slot of topic "t", and c joins "t" while the leader drains. (The
// leader kept its election node through its drain, its loop stopped:
// nobody assigned anything until its drain timeout.)
func TestJoinIsAssignedWhileTheLeaderDrains(t *testing.T) {
	t.Parallel()
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("leaderdrain-%d", time.Now().UnixNano())
	const drain = 6 * time.Second
	z, err := zookeeper.New(zookeeper.Config{Servers: servers, SessionTimeout: 4 * time.Second,
		Root: livenessRoot, WorkerID: "leader"})
	require.NoError(t, err)
	leader := &stubborn{} // its listener never finishes: the leave drains for the whole drain timeout
	ctx, stopLeader := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() {
		leaderDone <- z.Run(ctx, coordinator.Member{Namespace: ns, DrainTimeout: drain,
			Topics: []coordinator.TopicThreads{definedTopic("a", 1)}}, leader)
	}()
	t.Cleanup(func() { stopLeader(); <-leaderDone })
	waitFor(t, 10*time.Second, "the leader holds its slot of a", func() bool { _, n := leader.leases(); return n == 1 })

	topicT := definedTopic("t", 16)
	b := startPolledWorker(t, servers, ns, "b", []coordinator.TopicThreads{topicT}, 250*time.Millisecond, nil)
	waitFor(t, 10*time.Second, "b holds all 16 slots of t", func() bool { return b.h.valid() == 16 })

	stopLeader() // it leaves: revokes its slot of a and waits for the release
	time.Sleep(300 * time.Millisecond)
	joined := time.Now()
	c := startPolledWorker(t, servers, ns, "c", []coordinator.TopicThreads{topicT}, 250*time.Millisecond, nil)
	ok := false
	for time.Since(joined) < drain+5*time.Second {
		if c.h.valid() == 8 && b.h.valid() == 8 {
			ok = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(joined)
	t.Logf("c held its 8 slots of t %v after it joined (leader's drain timeout %v); ok=%v", took.Round(time.Millisecond), drain, ok)
	assert.True(t, ok, "c never held its share")
	assert.Less(t, took, 4*time.Second, "c's join waited %v: for the leaving leader's drain", took.Round(time.Millisecond))
}

// slowOne releases every revoked lease at once, except slot slow's, whose
// listener runs on (it is never released: the leave takes it away at the
// drain timeout).
type slowOne struct {
	*holder
	slow int
}

func (h slowOne) Revoked(l *coordinator.Lease) {
	if l.Slot() == h.slow {
		return
	}
	h.holder.Revoked(l)
}

// A worker that leaves hands back each slot once its thread releases it, as
// the Redis coordinator does: here it releases 7 of its 8 slots at once and
// one listener runs on, and b serves those 7 within seconds. (Every owner
// node was deleted once the slowest listener was done, at the drain
// timeout.)
func TestLeavingWorkersReleasedSlotsMoveBeforeItsDrainEnds(t *testing.T) {
	t.Parallel()
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("leavedrain-%d", time.Now().UnixNano())
	const drain = 6 * time.Second
	topicT := definedTopic("t", 16)
	b := startPolledWorker(t, servers, ns, "b", []coordinator.TopicThreads{topicT}, 250*time.Millisecond, nil) // the leader
	waitFor(t, 10*time.Second, "b holds all 16 slots", func() bool { return b.h.valid() == 16 })

	z, err := zookeeper.New(zookeeper.Config{Servers: servers, SessionTimeout: 4 * time.Second,
		Root: livenessRoot, WorkerID: "a"})
	require.NoError(t, err)
	a := slowOne{holder: newHolder(&sharedSlots{holders: map[int]int{}}), slow: -1}
	ctx, stopA := context.WithCancel(context.Background())
	aDone := make(chan error, 1)
	go func() {
		aDone <- z.Run(ctx, coordinator.Member{Namespace: ns, DrainTimeout: drain,
			Topics: []coordinator.TopicThreads{topicT}}, &a)
	}()
	t.Cleanup(func() { stopA(); <-aDone })
	waitFor(t, 10*time.Second, "a and b hold 8 each", func() bool { return a.valid() == 8 && b.h.valid() == 8 })
	a.slow = validOf(a.holder)[0]

	stopA() // a leaves: 7 slots are released at once, one listener runs on
	left := time.Now()
	ok := false
	for time.Since(left) < drain+5*time.Second {
		if b.h.valid() >= 15 {
			ok = true
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(left)
	t.Logf("b held a's 7 released slots %v after a began to leave (a's drain timeout %v); ok=%v", took.Round(time.Millisecond), drain, ok)
	assert.True(t, ok, "b never held a's released slots")
	assert.Less(t, took, 4*time.Second, "a's released slots stayed unserved %v: until a's slowest listener was done", took.Round(time.Millisecond))
}
