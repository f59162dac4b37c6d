package rmq

import (
	"time"

	"github.com/rmq-go/rmq/internal/backoff"
)

// nodeBackoff is how a thread backs off from a Redis node whose calls fail:
// the node's slots wait (50 ms doubling to 5 s) while the thread goes on
// serving slots on other nodes, so a dead Cluster master stalls only its own
// slots. On a single node every slot shares the one node, so a failing Redis
// costs one call per pause, not one per slot. A slot is held back by the
// node that serves it now: once a Cluster's slot map names a new master (the
// dead one's replica, promoted), the slot is served at once; while a node is
// held back the thread looks at the map at least every nodeRecheck, and asks
// for it to be reloaded (rate-limited), so that a promotion is noticed even
// by a process that makes no other call.
type nodeBackoff struct {
	errs  int       // consecutive failures
	until time.Time // no call to the node before this
}

// nodeRecheck bounds how long a thread waits before it looks again at the
// node of a slot held back by its node's pause.
const nodeRecheck = 250 * time.Millisecond

// nodeState returns the node serving s and its backoff, or nil if the node
// has not failed lately.
func (t *thread) nodeState(s *slotState) (string, *nodeBackoff) {
	node := t.sub.c.broker.Node(s.keys)
	return node, t.down[node]
}

// heldBack reports whether s's node is in a pause at now, and until when
// the thread need not look at s again.
func (t *thread) heldBack(s *slotState, now time.Time) (time.Time, bool) {
	if len(t.down) == 0 {
		return time.Time{}, false
	}
	_, nb := t.nodeState(s)
	if nb == nil || !now.Before(nb.until) {
		return time.Time{}, false
	}
	t.sub.c.broker.RefreshTopology()
	if recheck := now.Add(nodeRecheck); recheck.Before(nb.until) {
		return recheck, true
	}
	return nb.until, true
}

// failed records a failed call to s's node and pauses the node; it returns
// how many calls to it failed in a row.
func (t *thread) failed(s *slotState, now time.Time) int {
	node, nb := t.nodeState(s)
	if nb == nil {
		nb = &nodeBackoff{}
		if t.down == nil {
			t.down = make(map[string]*nodeBackoff)
		}
		t.down[node] = nb
	}
	nb.errs++
	nb.until = now.Add(backoff.Redis.Delay(nb.errs))
	return nb.errs
}

// recovered forgets the failures of s's node after a call succeeded; it
// returns how many calls had failed in a row.
func (t *thread) recovered(s *slotState) int {
	if len(t.down) == 0 {
		return 0
	}
	node, nb := t.nodeState(s)
	if nb == nil {
		return 0
	}
	delete(t.down, node)
	return nb.errs
}
