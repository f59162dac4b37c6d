package rmq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/testenv"
)

// handCoordinator gives every slot to thread 0 of its one process and takes
// slots back or hands them out again when the test says.
type handCoordinator struct {
	mu     sync.Mutex
	h      coordinator.Handler
	topic  string
	grants map[int]*coordinator.Grant
	ready  chan struct{}
}

func newHandCoordinator() *handCoordinator {
	return &handCoordinator{grants: map[int]*coordinator.Grant{}, ready: make(chan struct{})}
}

// Run implements coordinator.Coordinator.
func (hc *handCoordinator) Run(ctx context.Context, m coordinator.Member, h coordinator.Handler) error {
	hc.mu.Lock()
	hc.h, hc.topic = h, m.Topics[0].Topic
	for s := range m.Topics[0].SlotAmount {
		hc.grantLocked(s)
	}
	hc.mu.Unlock()
	close(hc.ready)
	select {
	case <-ctx.Done():
	case <-m.Abandoned:
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	for s, g := range hc.grants {
		g.Revoke()
		h.Revoked(g.Lease())
		select {
		case <-g.Released():
		case <-m.Abandoned:
			g.Lose()
		}
		delete(hc.grants, s)
	}
	return nil
}

func (hc *handCoordinator) grantLocked(slot int) {
	l, g := coordinator.NewLease(hc.topic, slot, 0, 0)
	hc.grants[slot] = g
	hc.h.Assigned(l)
}

// revoke takes slot back without waiting for its release.
func (hc *handCoordinator) revoke(slot int) *coordinator.Grant {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	g := hc.grants[slot]
	delete(hc.grants, slot)
	g.Revoke()
	hc.h.Revoked(g.Lease())
	return g
}

// grant hands slot out again.
func (hc *handCoordinator) grant(slot int) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	hc.grantLocked(slot)
}

// contentIn returns a content of topic's slot slot (of slots), starting with
// prefix.
func contentIn(prefix string, slot, slots int) string {
	for i := 0; ; i++ {
		if c := fmt.Sprintf("%s-%d", prefix, i); rmq.SlotIndex([]byte(c), slots) == slot {
			return c
		}
	}
}

// A slot released while its master is cut off from the process, before
// anything declined it, lets the thread go on to its other slots after one
// unanswered flush (flushWait) rather than after five with their backoffs
// (about 3 s); the outcome it could not settle is delivered again after the
// consume timeout, not lost.
func TestClusterReleaseIntoACutMasterHoldsTheThreadOnce(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	const slots = 8
	masterOf := func(slot int) string { return testenv.MasterOf(t, direct, fmt.Sprintf("%s:{t:%d}:store", ns, slot)) }
	cutSlot, otherSlot := 0, -1
	cutAddr := masterOf(cutSlot)
	for s := 1; s < slots && otherSlot < 0; s++ {
		if masterOf(s) != cutAddr {
			otherSlot = s
		}
	}
	require.GreaterOrEqual(t, otherSlot, 0, "every slot on one master")
	p := testenv.StartPartition(t, cutAddr)
	via := testenv.ClusterVia(t, map[string]string{cutAddr: p.Addr()})

	held, after := contentIn("held", cutSlot, slots), contentIn("after", otherSlot, slots)
	entered, letGo := make(chan struct{}, 4), make(chan struct{})
	var mu sync.Mutex
	seen := map[string][]time.Time{}
	listener := rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		mu.Lock()
		seen[string(m.Content)] = append(seen[string(m.Content)], time.Now())
		first := len(seen[held]) == 1 && string(m.Content) == held
		mu.Unlock()
		if first {
			entered <- struct{}{}
			<-letGo
		}
		return nil
	})
	deliveries := func(content string) []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), seen[content]...)
	}
	hc := newHandCoordinator()
	c, err := rmq.New(via.Redis, rmq.WithNamespace(ns), rmq.WithCoordinator(hc), rmq.WithConsumeTimeout(2*time.Second), rmq.WithLogger(debugLogger()))
	require.NoError(t, err)
	define(t, c, "t", slots, rmq.Priority)
	require.NoError(t, c.Subscribe("t", listener))
	run(t, c)
	<-hc.ready

	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(held), Priority: 50}))
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the held message was not delivered")
	}
	require.Equal(t, int64(1), direct.ZCard(ctx, fmt.Sprintf("%s:{t:%d}:prepare", ns, cutSlot)).Val(), "the held message in prepare")
	p.Cut()
	g := hc.revoke(cutSlot)
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(after), Priority: 50}))
	released := time.Now()
	close(letGo) // its outcome now waits for a master that does not answer
	eventually(t, 10*time.Second, "the other master's message delivered", func() bool { return len(deliveries(after)) > 0 })
	took := deliveries(after)[0].Sub(released)
	t.Logf("the other master's message delivered %v after the cut slot's listener returned", took.Round(time.Millisecond))
	// One unanswered flush is 0.5 s; five with their backoffs were 3.2 s.
	assert.Less(t, took, 2*time.Second, "the release held the thread's other slots")
	select {
	case <-g.Released():
	case <-time.After(5 * time.Second):
		t.Fatal("the cut slot was not released")
	}

	// The call left running ends at go-redis's read timeout (5 s by default);
	// the cut outlasts it.
	time.Sleep(4 * time.Second)
	p.Heal()
	hc.grant(cutSlot)
	eventually(t, 15*time.Second, "the slot emptied: the outcome settled late, or the message delivered again", func() bool {
		n := 0
		for _, k := range []string{"store", "prepare", "retry"} {
			c, err := direct.ZCard(ctx, fmt.Sprintf("%s:{t:%d}:%s", ns, cutSlot, k)).Result()
			require.NoError(t, err)
			n += int(c)
		}
		return n == 0
	})
	t.Logf("the held message was delivered %d times", len(deliveries(held)))
}
