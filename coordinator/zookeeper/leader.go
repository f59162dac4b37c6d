package zookeeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/internal/declinebook"
)

// changed reports whether the node at path was modified since the last look
// (its data, or with children its list of children), recording what it saw.
// A missing node reads as changed once, then as unchanged.
func (r *membership) changed(path string, children bool) (bool, error) {
	ok, st, err := r.sess.conn.Exists(path)
	if err != nil {
		return false, fmt.Errorf("rmq: zookeeper exists %s: %w", path, err)
	}
	var z int64 = -1
	if ok {
		z = st.Mzxid
		if children {
			z = st.Pzxid
		}
	}
	last, seen := r.seen[path]
	r.seen[path] = z
	return !seen || last != z, nil
}

// elect reads the election when it changed and notes whether this worker leads.
func (r *membership) elect() error {
	path := r.paths.election()
	if ch, err := r.changed(path, true); err != nil || !ch {
		return err
	}
	children, _, err := r.sess.conn.Children(path)
	if err != nil {
		delete(r.seen, path) // read it again next time
		return fmt.Errorf("rmq: zookeeper election: %w", err)
	}
	leader := electionLeader(children) == r.election
	if leader != r.leader {
		r.leader, r.dirty = leader, true
		r.book, r.leadAt = declinebook.Book{}, time.Time{} // declines are timed afresh by each leadership
		r.log.Info("rmq: leadership", "leader", leader)
	}
	return nil
}

// lead recomputes and writes the assignment of every topic any worker
// subscribes, when membership or a worker's declines changed since the last
// time, or a decline seen then has stood long enough to be honoured.
func (r *membership) lead() error {
	conn := r.sess.conn
	ch, err := r.workersChanged()
	if err != nil {
		return err
	}
	if !ch && !r.dirty && !r.leadDue() {
		return nil
	}
	if ch {
		clear(r.workers) // read every node again: one may have changed
	}
	r.dirty = true // until the assignments are written
	ids, _, err := conn.Children(r.paths.workers())
	if err != nil {
		return fmt.Errorf("rmq: zookeeper workers: %w", err)
	}
	byTopic := map[string][]coordinator.WorkerThreads{}
	alive := map[string]bool{}
	book := r.book.Begin()
	for _, id := range ids {
		alive[id] = true
		w, ok := r.workers[id]
		if !ok {
			data, _, err := conn.Get(r.paths.worker(id))
			if errors.Is(err, zk.ErrNoNode) {
				continue // left meanwhile; the next look sees it gone
			}
			if err != nil {
				return fmt.Errorf("rmq: zookeeper worker %s: %w", id, err)
			}
			if json.Unmarshal(data, &w) != nil {
				r.log.Warn("rmq: unreadable worker node; ignoring it", "worker", id)
				continue
			}
			r.workers[id] = w
		}
		for topic, threads := range w.Topics {
			byTopic[topic] = append(byTopic[topic], coordinator.WorkerThreads{Worker: id, Threads: threads})
			book.Saw(id, topic, w.Declines[topic])
		}
	}
	r.leadAt = book.End()
	for id := range r.workers {
		if !alive[id] {
			delete(r.workers, id)
		}
	}
	// One topic failing does not hold up the others: its error is returned
	// once they are assigned, and the next pass tries it again.
	var errs []error
	for _, topic := range slices.Sorted(maps.Keys(byTopic)) {
		if err := r.assignTopic(topic, byTopic[topic], book.Honoured(topic)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.dirty = false
	return nil
}

// assignTopic writes the assignment of one topic if it changed, honouring
// the declines given (worker → slots). A concurrent
// write by another (outgoing) leader fails the version check, and the next
// round recomputes.
func (r *membership) assignTopic(topic string, workers []coordinator.WorkerThreads, declined map[string][]int) error {
	conn := r.sess.conn
	// The definition is read at each assignment (they are rare: a change of
	// membership or declines), never kept: a topic deleted and defined again
	// with another slot amount is assigned by its new one.
	data, _, err := conn.Get(r.paths.topic(topic))
	if errors.Is(err, zk.ErrNoNode) {
		// Deleted while a worker node still names it (a crashed worker's,
		// until its session expires): nothing to assign, and the other
		// topics go on being assigned.
		r.log.Info("rmq: a worker names a topic with no definition; not assigning it", "topic", topic)
		return nil
	}
	if err != nil {
		return fmt.Errorf("rmq: zookeeper topic %s: %w", topic, err)
	}
	var def struct {
		SlotAmount int `json:"slotAmount"`
	}
	if json.Unmarshal(data, &def) != nil || def.SlotAmount < 1 {
		r.log.Warn("rmq: unreadable topic definition; not assigning it", "topic", topic, "data", string(data))
		return nil
	}
	slots := def.SlotAmount
	path := r.paths.assignment(topic)
	var prev assignmentNode
	data, st, err := conn.Get(path)
	switch {
	case errors.Is(err, zk.ErrNoNode):
		st = nil
	case err != nil:
		return fmt.Errorf("rmq: zookeeper get %s: %w", path, err)
	default:
		_ = json.Unmarshal(data, &prev) // unreadable: start afresh
	}
	prevOwners := prev.owners()
	next := coordinator.AssignTopic(topic, slots, workers, prevOwners, declined)
	if slices.Equal(next, prevOwners) {
		return nil
	}
	out, err := encodeAssignment(topic, prev.Generation+1, next)
	if err != nil {
		return err
	}
	if st == nil {
		_, err = conn.Create(path, out, 0, r.z.acl)
	} else {
		_, err = conn.Set(path, out, st.Version)
	}
	if errors.Is(err, zk.ErrNodeExists) || errors.Is(err, zk.ErrBadVersion) {
		return fmt.Errorf("rmq: assignment of %s changed under us; recomputing", topic)
	}
	if err != nil {
		return fmt.Errorf("rmq: zookeeper write %s: %w", path, err)
	}
	r.log.Info("rmq: assignment written", "topic", topic, "generation", prev.Generation+1,
		"workers", len(workers), "moved", movedSlots(prevOwners, next))
	return nil
}

func movedSlots(prev, next []coordinator.Owner) int {
	n := 0
	for i := range next {
		if i >= len(prev) || prev[i] != next[i] {
			n++
		}
	}
	return n
}
