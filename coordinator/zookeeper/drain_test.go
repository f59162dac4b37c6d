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

// validSlots returns the slots of the leases that are valid now.
func validSlots(leases []*coordinator.Lease) map[int]bool {
	v := map[int]bool{}
	for _, l := range leases {
		if l.Valid() {
			v[l.Slot()] = true
		}
	}
	return v
}

// A slot that moves to a new worker while its holder never releases it is
// taken from the holder once the drain timeout has passed (the loop wakes
// for it: no other event comes meanwhile), and the new worker serves it
// then, never while the old lease is valid.
func TestZooKeeperTakesAnUnreleasedSlotAwayAfterTheDrainTimeout(t *testing.T) {
	t.Parallel()
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("drain-%d", time.Now().UnixNano())
	const drain = 1500 * time.Millisecond
	run := func(id string, h coordinator.Handler) {
		z, err := zookeeper.New(zookeeper.Config{
			Servers: servers, SessionTimeout: 4 * time.Second, Root: "/rmq-test", WorkerID: id})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		m := coordinator.Member{Namespace: ns, DrainTimeout: drain, Topics: []coordinator.TopicThreads{
			{Topic: "t", SlotAmount: 16, Threads: 1, Definition: `{"slotAmount":16,"type":"Priority"}`}}}
		go func() { _ = z.Run(ctx, m, h); close(done) }()
		t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				t.Errorf("worker %s did not stop", id)
			}
		})
	}

	a := &stubborn{} // never releases (zookeeper_test.go)
	run("a", a)
	waitFor(t, 10*time.Second, "a holds all 16 slots", func() bool { _, n := a.leases(); return n == 16 })

	b := newHolder(&sharedSlots{holders: map[int]int{}})
	joined := time.Now()
	run("b", b)
	overlaps := 0
	took := waitFor(t, drain+10*time.Second, "b serves its 8 slots", func() bool {
		la, _ := a.leases()
		b.mu.Lock()
		lb := make([]*coordinator.Lease, 0, len(b.held))
		for _, l := range b.held {
			lb = append(lb, l)
		}
		b.mu.Unlock()
		va, vb := validSlots(la), validSlots(lb)
		for slot := range vb {
			if va[slot] {
				overlaps++
			}
		}
		return len(vb) == 8 && len(va) == 8
	})
	t.Logf("b served its share %v after it joined (drain timeout %v)", took, drain)
	assert.Zero(t, overlaps, "a slot served by both while a's lease was valid")
	assert.GreaterOrEqual(t, time.Since(joined), drain, "a had the drain timeout to release")
	assert.Less(t, took, drain+5*time.Second, "taken away soon after the drain timeout")
}
