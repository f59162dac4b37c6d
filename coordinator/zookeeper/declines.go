package zookeeper

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/rmq-go/rmq/coordinator"
)

// HonoursDeclines implements coordinator.DeclineHonourer: a worker's node
// carries its declines, and the leader's assignment moves a slot a worker
// declines to a worker that does not, once the decline has stood for two
// seconds (declinebook.Grace).
func (z *Coordinator) HonoursDeclines() bool { return true }

// declinesNow returns the declines of the subscribed topics (nil if none).
func (r *membership) declinesNow() map[string][]int {
	return r.m.Declines.Of(func(topic string) bool { t, ok := r.topics[topic]; return ok && t.Threads > 0 })
}

// declare writes this worker's node again when its declines changed, then
// bumps the workers' node (its data), which the leader follows.
func (r *membership) declare() error {
	now := r.declinesNow()
	if maps.EqualFunc(now, r.node.Declines, slices.Equal) {
		return nil
	}
	node := r.node
	node.Declines = now
	data, _ := json.Marshal(node)
	conn := r.sess.conn
	if _, err := conn.Set(r.paths.worker(r.id), data, -1); err != nil {
		return fmt.Errorf("rmq: zookeeper describe %s: %w", r.id, err)
	}
	if _, err := conn.Set(r.paths.workers(), nil, -1); err != nil {
		return fmt.Errorf("rmq: zookeeper bump %s: %w", r.paths.workers(), err)
	}
	r.node = node
	r.log.Info("rmq: declines", "declined", len(now))
	return nil
}

// workersChanged reports whether a worker joined or left (the children of
// the workers' node) or one changed its node (the data of the workers'
// node, which declare bumps) since the last look.
func (r *membership) workersChanged() (bool, error) {
	path := r.paths.workers()
	ok, st, err := r.sess.conn.Exists(path)
	if err != nil {
		return false, fmt.Errorf("rmq: zookeeper exists %s: %w", path, err)
	}
	var children, data int64 = -1, -1
	if ok {
		children, data = st.Pzxid, st.Mzxid
	}
	lastChildren, seen := r.seen[path]
	lastData := r.seen[path+"\x00data"]
	r.seen[path], r.seen[path+"\x00data"] = children, data
	return !seen || lastChildren != children || lastData != data, nil
}

// leadDue reports whether a decline the last assignment did not yet honour
// has ripened since.
func (r *membership) leadDue() bool {
	return r.leader && !r.leadAt.IsZero() && !time.Now().Before(r.leadAt)
}

var _ coordinator.DeclineHonourer = (*Coordinator)(nil)
