package zookeeper

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// Claims of unknown outcome. A create whose reply is lost (the connection
// broke with it in flight, and the session lived on past the reconnect) may
// have made the slot's owner node, ephemeral to this session. The slot then
// reads as held by someone: this worker, if it is still assigned the slot,
// would wait for itself for as long as its session lives, and so would the
// worker the slot moved to if it was assigned elsewhere meanwhile. So claim
// marks a slot unsure until the create's outcome is read, and each pass
// settles the unsure slots first (settleUnsure).

// settleUnsure reads the owner node of each unsure slot of t. One of this
// session, of a slot still assigned to the thread it names, is held (its
// lease handed out); one of a slot assigned elsewhere is deleted, so that
// its new owner claims it. A slot stays unsure while its node cannot be
// read, and is forgotten once it is settled, absent, or another session's.
func (r *membership) settleUnsure(t *topicState, sid int64) error {
	conn := r.sess.conn
	for slot := range t.unsure {
		path := r.paths.owner(t.Topic, slot)
		data, st, err := conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			delete(t.unsure, slot)
			continue
		}
		if err != nil {
			return fmt.Errorf("rmq: zookeeper claim %s: %w", path, err)
		}
		if st.EphemeralOwner != sid || t.held[slot] != nil {
			delete(t.unsure, slot)
			continue
		}
		var node ownerNode
		if json.Unmarshal(data, &node) == nil && node.Worker == r.id && r.wants(t, slot, node.Thread) {
			delete(t.unsure, slot)
			c := &heldSlot{slot: slot, thread: node.Thread, token: st.Czxid}
			t.held[slot] = c
			r.issue(t, c)
			r.log.Info("rmq: a claim whose reply was lost went through; serving the slot", "topic", t.Topic, "slot", slot)
			continue
		}
		if err := conn.Delete(path, st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("rmq: zookeeper release %s: %w", path, err)
		}
		delete(t.unsure, slot)
		r.log.Info("rmq: a claim whose reply was lost went through after the slot was assigned elsewhere; handed back",
			"topic", t.Topic, "slot", slot)
	}
	return nil
}
