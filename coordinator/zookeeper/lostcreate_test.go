package zookeeper_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/testenv"
)

// ownerCreate is what a claim's create request of slot of topic "t" holds:
// the owner node's path, then the data's length (four bytes, the first of
// them 0), which tells slot 1 from slots 10 to 15.
func ownerCreate(slot int) []byte { return fmt.Appendf(nil, "/owners/t/%d\x00", slot) }

// A claim whose reply is lost (the connection breaks with the create in
// flight, and the session lives on past the reconnect) leaves an owner node
// of this session that the worker does not know it holds. The worker must
// find it its own and serve the slot: before, it waited for the slot to be
// freed, by itself, for as long as its session lived.
func TestZooKeeperClaimWithALostReplyIsHeld(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	p := testenv.StartPartition(t, servers[0])
	ns := fmt.Sprintf("lostcreate-%d", time.Now().UnixNano())
	p.DropReplyTo(ownerCreate(5))
	shared := &sharedSlots{holders: map[int]int{}}
	started := time.Now()
	w := startWorker(t, []string{p.Addr()}, ns, "a", 1, shared)
	waitFor(t, 10*time.Second, "the claim of slot 5 loses its reply", func() bool { return p.Struck() == 1 })
	took := waitFor(t, 15*time.Second, "a holds all 16 slots", func() bool { return w.h.valid() == 16 })
	t.Logf("a held all 16 slots %v after it started", time.Since(started).Round(time.Millisecond))
	assert.Less(t, took, 5*time.Second)
	assert.Equal(t, 1, shared.worstSeen(), "most holders of one slot at once")
}

// The same, with the slot assigned elsewhere before the worker learns of
// its node: a joins b, its claim of a slot loses its reply and its link
// stays cut while c joins and is assigned that slot. After the heal, a
// deletes the node it made unawares, and c serves the slot; before, c
// waited for it for as long as a's session lived.
func TestZooKeeperClaimWithALostReplyOfAMovedSlotIsHandedBack(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	ns := fmt.Sprintf("lostmoved-%d", time.Now().UnixNano())
	// The slot a is assigned when it joins b and c is assigned when it
	// joins them (coordinator.Assign is sticky and a pure function).
	ws := []coordinator.WorkerThreads{{Worker: "b", Threads: 1}, {Worker: "a", Threads: 1}, {Worker: "c", Threads: 1}}
	alone := coordinator.Assign(16, ws[:1], nil)
	two := coordinator.Assign(16, ws[:2], alone)
	three := coordinator.Assign(16, ws, two)
	moved, ofC := -1, 0
	for s := range 16 {
		if three[s].Worker == "c" {
			ofC++
			if moved < 0 && two[s].Worker == "a" {
				moved = s
			}
		}
	}
	require.GreaterOrEqual(t, moved, 0, "no slot moves from a to c")

	shared := &sharedSlots{holders: map[int]int{}}
	b := startWorker(t, servers, ns, "b", 1, shared)
	waitFor(t, 10*time.Second, "b holds all 16 slots", func() bool { return b.h.valid() == 16 })
	p := testenv.StartPartition(t, servers[0])
	p.DropReplyToAndCut(ownerCreate(moved))
	a := startWorkerSession(t, []string{p.Addr()}, ns, "a", 1, 16, shared, nil, 10*time.Second)
	waitFor(t, 10*time.Second, fmt.Sprintf("a's claim of slot %d loses its reply", moved), func() bool { return p.Struck() == 1 })

	c := startWorker(t, servers, ns, "c", 1, shared)
	waitFor(t, 8*time.Second, "c serves a slot (the assignment names it)", func() bool { return c.h.valid() > 0 })
	healed := time.Now()
	p.Heal()
	took := waitFor(t, 15*time.Second, fmt.Sprintf("c holds its %d slots", ofC), func() bool { return c.h.valid() == ofC })
	t.Logf("c held its %d slots, slot %d among them, %v after the heal", ofC, moved, time.Since(healed).Round(time.Millisecond))
	assert.Less(t, took, 8*time.Second)
	waitFor(t, 10*time.Second, "all 16 slots served", func() bool { return a.h.valid()+b.h.valid()+c.h.valid() == 16 })
	assert.Equal(t, 1, shared.worstSeen(), "most holders of one slot at once")
}
