package rmq

import (
	"time"

	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/rdb"
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
	node := t.sub.c.broker.Node(*s.keys)
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

// popFailed backs off after a failed pop: the slot alone while its hash
// slot moves (see slotMoving), else its node, once per group's failure.
func (t *thread) popFailed(call *popCall, now time.Time) {
	c, s, err := t.sub.c, call.s, call.err
	if rdb.SlotMoving(err) {
		c.counters.redisErrors.Add(1)
		t.slotMoving(s, now, err)
		return
	}
	if call.counted {
		return
	}
	c.counters.redisErrors.Add(1)
	if n := t.failed(s, now); n == 1 || n%20 == 0 {
		c.cfg.logger.Warn("rmq: pop failed; backing off from the slot's node", "topic", t.sub.topic.Name,
			"slot", s.lease.Slot(), "failures", n, "err", err)
	}
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

// A slot whose hash slot moves between a Cluster's masters (a resharding)
// has its pop refused for a moment, though both masters are well: a script
// whose keys are partly on each side is answered TRYAGAIN until the move
// completes (the cycle's keys include sets that are often empty, so do not
// exist on either side), a redirection may outlast go-redis's
// MaxRedirects, and a node that has just forgotten a master leaving the
// Cluster may count the slot as nobody's for a moment (CLUSTERDOWN Hash slot
// not served; rdb.SlotMoving). Such a slot waits on its own
// (backoff.SlotMove) while the thread serves its other slots on that node,
// and it is not logged as a failure; only a slot refused slotMoveWarn times
// in a row is (12–24 s: a migration left open by an interrupted resharding,
// or a slot left without a master, which redis-cli --cluster fix mends).
const slotMoveWarn = 30

// slotMoving records a pop of s refused while its hash slot moves, and has
// s looked at again after its pause.
func (t *thread) slotMoving(s *slotState, now time.Time, err error) {
	s.moving++
	s.next = now.Add(backoff.SlotMove.Delay(s.moving))
	log := t.sub.c.cfg.logger
	if s.moving%slotMoveWarn == 0 {
		log.Warn("rmq: pop refused while the slot's hash slot moves, for a while now (a migration left open, "+
			"or a slot without a master? redis-cli --cluster fix)",
			"topic", t.sub.topic.Name, "slot", s.lease.Slot(), "refusals", s.moving, "err", err)
	} else if s.moving == 1 {
		log.Debug("rmq: pop refused while the slot's hash slot moves; trying again soon", "topic", t.sub.topic.Name,
			"slot", s.lease.Slot(), "err", err)
	}
}
