package zookeeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/wait"
)

// readAssignment refreshes t.desired when its assignment node changed.
func (r *membership) readAssignment(t *topicState) error {
	path := r.paths.assignment(t.Topic)
	if ch, err := r.changed(path, false); err != nil || !ch {
		return err
	}
	data, _, err := r.sess.conn.Get(path)
	if errors.Is(err, zk.ErrNoNode) {
		return nil // not written yet
	}
	if err != nil {
		delete(r.seen, path) // read it again next time
		return fmt.Errorf("rmq: zookeeper assignment of %s: %w", t.Topic, err)
	}
	var a assignmentNode
	if err := json.Unmarshal(data, &a); err != nil {
		r.log.Warn("rmq: unreadable assignment; keeping the last one", "topic", t.Topic, "err", err)
		return nil
	}
	t.desired = a.owners()
	return nil
}

// wants reports whether the assignment gives slot to this worker's thread.
func (r *membership) wants(t *topicState, slot, thread int) bool {
	return slot < len(t.desired) && t.desired[slot] == coordinator.Owner{Worker: r.id, Thread: thread}
}

// applyAssignment revokes slots that move away, deletes the owner nodes of
// released ones, and claims slots assigned here.
func (r *membership) applyAssignment(t *topicState, sid int64) error {
	now := time.Now()
	for slot, c := range t.held {
		want := r.wants(t, slot, c.thread)
		released := c.grant.IsReleased()
		switch {
		case !want && !c.moving && !released:
			r.busy = true
			c.moving, c.drainBy = true, now.Add(r.m.DrainTimeout)
			c.grant.Revoke()
			r.h.Revoked(c.grant.Lease())
			// Its release kicks the loop (dropReleased, registered at
			// issue), and the loop's wait ends by drainBy (nextDeadline):
			// nothing to wait for here, no goroutine per revoked slot.
		case c.moving && !released && now.After(c.drainBy):
			r.log.Warn("rmq: slot not released within the drain timeout; taking it away",
				"topic", t.Topic, "slot", slot, "drain", r.m.DrainTimeout)
			c.grant.Lose()
			if err := r.drop(t, c, sid); err != nil {
				return err
			}
		case released && (!want || c.moving):
			if err := r.drop(t, c, sid); err != nil {
				return err
			}
		case released && now.After(c.reissueAt):
			// Released while still ours (the session was suspended): a new lease.
			if !r.issue(t, c) {
				continue
			}
		}
	}
	if err := r.settleUnsure(t, sid); err != nil {
		return err
	}
	var free map[int]bool // slots without an owner node, read once per pass
	for slot, o := range t.desired {
		if o.Worker != r.id || o.Thread >= t.Threads || t.held[slot] != nil {
			continue
		}
		if free == nil {
			var err error
			if free, err = r.freeSlots(t); err != nil {
				return err
			}
		}
		if !free[slot] {
			r.busy = true // another worker still holds it: look again soon
			continue
		}
		if r.claims >= claimsPerPass {
			r.busy = true // the rest in the next pass, at once
			continue
		}
		r.claims++
		if err := r.claim(t, slot, o.Thread, sid); err != nil {
			return err
		}
	}
	return nil
}

// claimsPerPass bounds the claims of one pass (two ZooKeeper calls each):
// a worker given thousands of slots claims them over several passes, each
// begun by the leader's work, so that a leader taking a large topic goes on
// assigning the others' (two calls a slot: thousands of slots held one pass
// for seconds).
const claimsPerPass = 512

// freeSlots returns the slots of t that have no owner node.
func (r *membership) freeSlots(t *topicState) (map[int]bool, error) {
	names, _, err := r.sess.conn.Children(r.paths.owners(t.Topic))
	if err != nil {
		return nil, fmt.Errorf("rmq: zookeeper owners of %s: %w", t.Topic, err)
	}
	free := make(map[int]bool, t.SlotAmount)
	for i := range t.SlotAmount {
		free[i] = true
	}
	for _, n := range names {
		if i, err := strconv.Atoi(n); err == nil {
			delete(free, i)
		}
	}
	return free, nil
}

// claim creates the slot's owner node and hands out a lease on it. If
// another worker created it first, the slot is left for a later pass.
func (r *membership) claim(t *topicState, slot, thread int, sid int64) error {
	conn := r.sess.conn
	path := r.paths.owner(t.Topic, slot)
	data, _ := json.Marshal(ownerNode{Worker: r.id, Thread: thread})
	t.unsure[slot] = true // until the node is read (lostclaims.go)
	_, err := conn.Create(path, data, zk.FlagEphemeral, r.z.acl)
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("rmq: zookeeper claim %s: %w", path, err)
	}
	_, st, err := conn.Exists(path)
	if err != nil {
		return fmt.Errorf("rmq: zookeeper claim %s: %w", path, err)
	}
	delete(t.unsure, slot)
	if st == nil || st.EphemeralOwner != sid {
		r.busy = true // lost the race, or gone again: look again soon
		return nil
	}
	c := &heldSlot{slot: slot, thread: thread, token: st.Czxid}
	t.held[slot] = c
	r.issue(t, c)
	return nil
}

// issue hands out a new lease on a held slot, once this session has a valid
// lease deadline. It reports whether it did.
func (r *membership) issue(t *topicState, c *heldSlot) bool {
	r.mu.Lock()
	if !r.live || !time.Now().Before(r.leaseEnd) {
		r.mu.Unlock()
		if c.grant == nil {
			// Placeholder so the slot reads as held and released.
			var l *coordinator.Lease
			l, c.grant = coordinator.NewLease(t.Topic, c.slot, c.thread, c.token)
			l.Release()
		}
		return false // the heartbeat kicks when the deadline is valid again
	}
	l, g := coordinator.NewLease(t.Topic, c.slot, c.thread, c.token)
	g.SetDeadlineAt(r.leaseEnd)
	r.leases[g] = struct{}{}
	r.mu.Unlock()
	c.grant, c.moving, c.reissueAt = g, false, time.Now().Add(time.Second)
	g.AfterRelease(func() { r.dropReleased(g) })
	r.h.Assigned(l)
	return true
}

// dropReleased drops a released lease from the live set and kicks the loop, unless
// the membership has ended (Grant.AfterRelease).
func (r *membership) dropReleased(g *coordinator.Grant) {
	select {
	case <-r.done:
		return
	default:
	}
	r.mu.Lock()
	delete(r.leases, g)
	r.mu.Unlock()
	r.poke()
}

// drop deletes the owner node of a held slot (if it is still this session's)
// and forgets the claim. Only then may another worker claim the slot.
func (r *membership) drop(t *topicState, c *heldSlot, sid int64) error {
	conn := r.sess.conn
	path := r.paths.owner(t.Topic, c.slot)
	_, st, err := conn.Exists(path)
	if err != nil {
		return fmt.Errorf("rmq: zookeeper release %s: %w", path, err)
	}
	if st != nil && st.EphemeralOwner == sid {
		if err := conn.Delete(path, st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("rmq: zookeeper release %s: %w", path, err)
		}
	}
	delete(t.held, c.slot)
	return nil
}

// nextDeadline is how long the loop may sleep: the poll interval (a fast one
// while a handover is under way), or less when a drain deadline or a reissue
// falls due sooner; the poll interval while the session is suspended.
func (r *membership) nextDeadline() time.Duration {
	d := r.z.cfg.PollInterval
	if sid, _ := r.current(); sid == 0 {
		// Suspended: a pass does nothing until the session is back, whose
		// event wakes the loop; the deadlines below, long past meanwhile,
		// would make it spin.
		return d
	}
	if r.busy || r.dirty {
		d = min(d, fastPoll)
	}
	now := time.Now()
	if r.leader && !r.leadAt.IsZero() {
		d = min(d, r.leadAt.Sub(now))
	}
	for _, t := range r.topics {
		for _, c := range t.held {
			if c.moving {
				d = min(d, c.drainBy.Sub(now))
			} else if c.grant.IsReleased() {
				d = min(d, c.reissueAt.Sub(now))
			}
		}
	}
	return max(d, 5*time.Millisecond)
}

// fastPoll is the poll interval while a handover is under way.
const fastPoll = 25 * time.Millisecond

// leave hands every slot back and leaves the group. It first deletes its
// election and worker nodes, so that another worker leads and the leader
// assigns this one's slots elsewhere while it drains; then it revokes every
// slot and deletes each owner node as soon as that slot is released (up to
// the drain timeout, or until the client abandons its listeners, when the
// leases left are taken away), so that each slot moves once its own
// listener is done, not the slowest one's. Closing the session afterwards
// removes anything a failed delete left.
func (r *membership) leave() {
	sid, _ := r.current()
	live := func() bool {
		now, _ := r.current()
		return sid != 0 && now == sid && sid == r.joined && !wait.Closed(r.m.Abandoned)
	}
	if live() {
		conn := r.sess.conn
		if r.election != "" {
			_ = conn.Delete(r.paths.election()+"/"+r.election, -1)
		}
		_ = conn.Delete(r.paths.worker(r.id), -1)
	}
	type slotRef struct {
		t *topicState
		c *heldSlot
	}
	var pending []slotRef
	for _, t := range r.topics {
		for _, c := range t.held {
			if c.grant != nil && !c.grant.IsReleased() {
				c.grant.Revoke()
				r.h.Revoked(c.grant.Lease())
			}
			pending = append(pending, slotRef{t, c})
		}
	}
	deadline := time.NewTimer(r.m.DrainTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(leavePoll)
	defer tick.Stop()
	for late := false; len(pending) > 0; {
		kept := pending[:0]
		for _, p := range pending {
			if late && p.c.grant != nil {
				p.c.grant.Lose() // past the drain timeout, or abandoned
			}
			if !late && p.c.grant != nil && !p.c.grant.IsReleased() {
				kept = append(kept, p)
				continue
			}
			if live() {
				_ = r.drop(p.t, p.c, sid)
			}
		}
		if pending = kept; len(pending) == 0 || late {
			break
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			late = true
		case <-r.m.Abandoned:
			late = true
		}
	}
	if live() {
		r.log.Info("rmq: left")
	}
}

// leavePoll is how often a leave looks for slots released since.
const leavePoll = 20 * time.Millisecond
