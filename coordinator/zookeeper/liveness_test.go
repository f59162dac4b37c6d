package zookeeper_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

// livenessRoot is the root of the liveness tests' nodes.
const livenessRoot = "/rmq-liveness"

func definedTopic(name string, slots int) coordinator.TopicThreads {
	return coordinator.TopicThreads{Topic: name, SlotAmount: slots, Threads: 1,
		Definition: fmt.Sprintf(`{"slotAmount":%d,"type":"Priority"}`, slots)}
}

// startPolledWorker runs a worker with the given topics, poll interval and declines
// (4 s session) until the test ends or stop is called.
func startPolledWorker(t *testing.T, servers []string, ns, id string, topics []coordinator.TopicThreads, poll time.Duration,
	declines *coordinator.Declines) *worker {
	t.Helper()
	z, err := zookeeper.New(zookeeper.Config{Servers: servers, SessionTimeout: 4 * time.Second, Root: livenessRoot,
		WorkerID: id, PollInterval: poll})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{h: newHolder(&sharedSlots{holders: map[int]int{}}), stop: cancel, done: make(chan struct{})}
	m := coordinator.Member{Namespace: ns, DrainTimeout: 5 * time.Second, Declines: declines, Topics: topics}
	go func() { w.err = z.Run(ctx, m, w.h); close(w.done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-w.done:
		case <-time.After(20 * time.Second):
			t.Errorf("worker %s did not stop", id)
		}
	})
	return w
}

// validOf lists the slots h holds valid leases of.
func validOf(h *holder) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []int
	for s, l := range h.held {
		if l.Valid() {
			out = append(out, s)
		}
	}
	sort.Ints(out)
	return out
}

// A worker whose read of the election failed reads it again at its next
// pass: one that missed the moment its leader left still learns that it
// leads, and reassigns the old leader's slots. (The election's version was
// kept as read, so it never read it again until it changed once more.)
func TestFailedElectionReadIsReadAgain(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("elect-%d", time.Now().UnixNano())
	p := testenv.StartPartition(t, servers[0])
	topics := []coordinator.TopicThreads{definedTopic("t", 16)}
	a := startPolledWorker(t, servers, ns, "a", topics, 250*time.Millisecond, nil) // joins first: the leader
	waitFor(t, 10*time.Second, "a holds all 16 slots", func() bool { return a.h.valid() == 16 })
	b := startPolledWorker(t, []string{p.Addr()}, ns, "b", topics, 250*time.Millisecond, nil)
	waitFor(t, 15*time.Second, "a and b hold 8 each", func() bool { return a.h.valid() == 8 && b.h.valid() == 8 })

	// b's next getChildren2 of the election node loses its reply (the link
	// breaks with it in flight; the session lives on).
	path := livenessRoot + "/" + ns + "/election"
	match := binary.BigEndian.AppendUint32(nil, 12) // opGetChildren2
	match = binary.BigEndian.AppendUint32(match, uint32(len(path)))
	match = append(match, path...)
	p.DropReplyTo(match)

	a.stop() // graceful leave: a deletes its owner, election and worker nodes
	<-a.done
	require.NoError(t, a.err)
	waitFor(t, 10*time.Second, "b's read of the election loses its reply", func() bool { return p.Struck() == 1 })
	left := time.Now()
	ok := false
	for time.Since(left) < 15*time.Second {
		if b.h.valid() == 16 {
			ok = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.True(t, ok, "b, the only worker left, does not hold all 16 slots %v after a left: it holds %v",
		time.Since(left).Round(time.Millisecond), validOf(b.h))
}

// The leader reads a topic's slot amount at each assignment: a topic deleted
// and defined again with more slots is assigned by its new amount. (The
// leader kept the first amount it read for as long as it led, and the new
// slots were never served.)
func TestRedefinedTopicIsAssignedByItsNewSlotAmount(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("redef-%d", time.Now().UnixNano())
	ctx := context.Background()
	leader := startPolledWorker(t, servers, ns, "leader", []coordinator.TopicThreads{definedTopic("other", 2)}, 250*time.Millisecond, nil)
	waitFor(t, 10*time.Second, "the leader holds its topic", func() bool { return leader.h.valid() == 2 })

	w1 := startPolledWorker(t, servers, ns, "w1", []coordinator.TopicThreads{definedTopic("gone", 4)}, 250*time.Millisecond, nil)
	waitFor(t, 10*time.Second, "w1 holds the 4 slots of gone", func() bool { return w1.h.valid() == 4 })
	w1.stop()
	<-w1.done
	require.NoError(t, w1.err)

	admin, err := zookeeper.New(zookeeper.Config{Servers: servers, Root: livenessRoot, SessionTimeout: 4 * time.Second})
	require.NoError(t, err)
	defer admin.Close()
	waitFor(t, 10*time.Second, "w1 is gone", func() bool {
		ws, err := admin.Workers(ctx, ns)
		return err == nil && len(ws) == 1
	})
	require.NoError(t, admin.RemoveTopic(ctx, ns, "gone"))
	require.NoError(t, admin.RecordTopic(ctx, ns, "gone", `{"slotAmount":8,"type":"Priority"}`))

	w2 := startPolledWorker(t, servers, ns, "w2", []coordinator.TopicThreads{definedTopic("gone", 8)}, 250*time.Millisecond, nil)
	start := time.Now()
	ok := false
	for time.Since(start) < 15*time.Second {
		if w2.h.valid() == 8 {
			ok = true
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, slots, err := admin.Assignment(ctx, ns, "gone")
	require.NoError(t, err)
	assert.True(t, ok, "w2 holds %v of the 8 slots of the redefined topic after %v; the assignment covers %d slots",
		validOf(w2.h), time.Since(start).Round(time.Millisecond), len(slots))
}

// processCPU is this process's user and system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// While the session is suspended the loop sleeps the poll interval, woken by
// the session's return: a worker cut off from ZooKeeper costs no more CPU
// than a connected idle one. (The deadlines of its released slots, long past
// meanwhile, made it wake every 5 ms and walk every held slot.)
func TestSuspendedLoopSleeps(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("spin-%d", time.Now().UnixNano())
	p := testenv.StartPartition(t, servers[0])
	const slots = 1024
	topic := definedTopic("t", slots)
	topic.Threads = 4
	a := startPolledWorker(t, []string{p.Addr()}, ns, "a", []coordinator.TopicThreads{topic}, 250*time.Millisecond, nil)
	waitFor(t, 90*time.Second, "a holds every slot", func() bool { return a.h.valid() == slots })
	time.Sleep(time.Second)
	c0 := processCPU()
	time.Sleep(3 * time.Second)
	idle := processCPU() - c0

	p.Cut()
	waitFor(t, 15*time.Second, "a's session is suspended (every lease revoked)", func() bool {
		a.h.mu.Lock()
		defer a.h.mu.Unlock()
		return len(a.h.held) == 0
	})
	time.Sleep(500 * time.Millisecond)
	c1 := processCPU()
	time.Sleep(3 * time.Second)
	cut := processCPU() - c1
	p.Heal()
	t.Logf("CPU over 3 s: connected and idle %v, cut off from ZooKeeper %v", idle, cut)
	assert.Less(t, cut, idle, "a worker cut off from ZooKeeper works harder than a connected idle one")
}
