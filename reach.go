package rmq

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// reachWatch finds the Cluster masters this process cannot reach and
// declines the subscribed slots they serve (coordinator.Declines), so that a
// coordinator that honours it moves them to processes that can: a process
// cut off from one master alone no longer keeps that master's slots
// unserved while its leases hold through the others. Each reachProbe it
// pings every master that serves a subscribed slot, one PING in flight per
// master at most (a ping into a partition hangs until the client's
// timeouts); a master that has not answered for reachLost is out of reach,
// and it is back at its next answer, or, declined again soon after, once it
// has answered steadily for a while (masterReach). A master down for every
// process is declined by all of them, and then its slots move nowhere.
type reachWatch struct {
	c        *Client // its declines (Client.declines) are what the watch sets
	subs     map[string]*subscription
	answers  chan pingAnswer
	masters  map[string]*masterReach // master → what is known of its reach
	inFlight map[string]bool
	lost     map[string]bool // the masters declined now
	// The subscribed slots' masters, looked up again every reachRemap, or
	// every probe while a master is out of reach.
	nodes   map[string]rdb.SlotKeys     // master → a slot it serves
	slotsOf map[string]map[string][]int // master → topic → its slots
	mapped  time.Time
}

// pingAnswer is one PING's outcome.
type pingAnswer struct {
	node string // the master pinged, as named when sent
	err  error
}

const (
	reachProbe = time.Second      // how often every master is pinged
	reachLost  = 3 * time.Second  // how long without an answer makes a master out of reach
	reachRemap = 10 * time.Second // how often the slots' masters are looked up while all answer
)

// newReachWatch returns the watch for subs, or nil when nothing would use
// it: a single Redis, or a coordinator that does not honour declines.
func newReachWatch(c *Client, subs map[string]*subscription) *reachWatch {
	if c.declines == nil { // New decides (rmq.go)
		return nil
	}
	return &reachWatch{c: c, subs: subs, answers: make(chan pingAnswer, 16),
		masters: make(map[string]*masterReach), inFlight: make(map[string]bool)}
}

// run probes until ctx ends. A PING still in flight then ends on its own,
// by the client's timeouts, without being waited for: a partition must not
// hold up Close.
func (w *reachWatch) run(ctx context.Context) {
	tick := time.NewTicker(reachProbe)
	defer tick.Stop()
	w.probe(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case a := <-w.answers:
			w.answered(a)
		case <-tick.C:
			w.probe(ctx)
		}
	}
}

// answered records a PING's outcome.
func (w *reachWatch) answered(a pingAnswer) {
	delete(w.inFlight, a.node)
	if m := w.masters[a.node]; m != nil {
		m.answered(a.err == nil, time.Now())
	}
}

// mapSlots looks up the master of every subscribed slot, by the client's
// slot map (a few hundred ns a slot, hence not every probe).
func (w *reachWatch) mapSlots(now time.Time) {
	w.nodes, w.slotsOf, w.mapped = make(map[string]rdb.SlotKeys), make(map[string]map[string][]int), now
	for _, s := range w.subs {
		for i, keys := range s.topic.slots {
			node := w.c.broker.Node(keys)
			if node == "" {
				continue // the slot map cannot be had now
			}
			if _, ok := w.nodes[node]; !ok {
				w.nodes[node] = keys
				w.slotsOf[node] = make(map[string][]int)
			}
			w.slotsOf[node][s.topic.Name] = append(w.slotsOf[node][s.topic.Name], i)
		}
	}
}

// probe pings the masters of the subscribed slots that have no PING in
// flight, and declines the slots of those out of reach.
func (w *reachWatch) probe(ctx context.Context) {
	now := time.Now()
	if len(w.lost) > 0 || now.Sub(w.mapped) >= reachRemap {
		w.mapSlots(now)
	}
	nodes, slotsOf := w.nodes, w.slotsOf
	for node, keys := range nodes {
		if _, seen := w.masters[node]; !seen {
			w.masters[node] = newMasterReach(now)
		}
		if !w.inFlight[node] {
			w.inFlight[node] = true
			go func() {
				pctx, cancel := context.WithTimeout(ctx, 2*reachLost)
				defer cancel()
				_, err := w.c.broker.PingNode(pctx, keys)
				select {
				case w.answers <- pingAnswer{node: node, err: err}:
				case <-ctx.Done():
				}
			}()
		}
	}
	lost := make(map[string]bool)
	for node, m := range w.masters {
		switch {
		case len(nodes) > 0 && slotsOf[node] == nil && !w.inFlight[node]:
			delete(w.masters, node) // serves no subscribed slot any longer
		case m.judge(now) && slotsOf[node] != nil:
			lost[node] = true
		}
	}
	changed := !maps.Equal(lost, w.lost)
	w.lost = lost
	if len(lost) == 0 && !changed {
		return
	}
	declined := 0
	for _, s := range w.subs {
		var slots []int
		for node := range lost {
			slots = append(slots, slotsOf[node][s.topic.Name]...)
		}
		declined += len(slots)
		w.c.declines.Set(s.topic.Name, slots)
	}
	if changed {
		if len(lost) > 0 {
			w.c.cfg.logger.Warn("rmq: Redis masters out of reach of this process; declining their slots",
				"masters", slices.Sorted(maps.Keys(lost)), "slots", declined)
		} else {
			w.c.cfg.logger.Info("rmq: every Redis master within reach again; declining no slot")
		}
	}
}
