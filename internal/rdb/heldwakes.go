package rdb

import (
	"sync/atomic"
	"time"
)

// Held wake-ups. On a Cluster a wake-up costs more than on a single node: its
// SPUBLISH (see shardsub.go) is carried over the cluster bus to the master's
// replica, and with a PUBLISH to every node. A publication per write, as on
// a single node, would cost the master and its replica a message per write.
// A Cluster's streams therefore hold a write's wake-ups for up to wakeHold
// and publish them together with a later write of the same stream, after its
// entries, or on their own once wakeHold has passed (the sender's writer does
// that when the Cluster strategy's timer queues a flush). The order that
// makes a wake-up safe (its entries are stored when a consumer hears of it)
// is kept, since one connection carries both. Measured with sharded
// wake-ups (BenchmarkSendCluster, 6 interleaved pairs): 42.5k Sends/s with
// the hold, 38.0k without, the nodes' CPU 25.8 µs per message against 30.8.

// wakeHold is the longest a stream holds a wake-up.
const wakeHold = time.Millisecond

// heldWakes are the wake-ups a stream holds.
type heldWakes struct {
	set   wakeSet
	since time.Time     // when the oldest was gathered; zero while none is held
	hold  time.Duration // wakeHold; longer in tests, which cannot make writes come faster than it
}

// holdWakes adds the wake-ups of entries to those held and, once the oldest
// has waited wakeHold, makes them all the publications of this write
// (s.pubs). It reports whether wake-ups are still held.
func (s *sendStream) holdWakes(entries []Entry) bool {
	h := s.holding
	for i := range entries {
		if entries[i].Wake.Channel != "" {
			if h.since.IsZero() {
				h.since = time.Now()
			}
			h.set.add(entries[i].Wake)
		}
	}
	if h.since.IsZero() || time.Since(h.since) < h.hold {
		return !h.since.IsZero()
	}
	s.pubs, s.payload = h.set.appendPublications(s.pubs[:0], s.payload)
	h.set.reset()
	h.since = time.Time{}
	return false
}

// flushWakes publishes the held wake-ups in a write of their own if the
// oldest has waited wakeHold, or at once if now is set. It reports whether
// wake-ups are still held.
func (s *sendStream) flushWakes(now bool) bool {
	h := s.holding
	if h == nil || s.asideBusy() {
		return false // a write aside owns the held wake-ups; its end brings the writer back
	}
	if h.since.IsZero() {
		return false
	}
	if !now && time.Since(h.since) < h.hold {
		return true
	}
	if !now && s.kick != nil && s.dialAside() {
		return true // published once the connection is up (the dial brings the writer back)
	}
	s.pubs, s.payload = h.set.appendPublications(s.pubs[:0], s.payload)
	h.set.reset()
	h.since = time.Time{}
	s.writeCommands(nil, nil, s.pubs)
	clear(s.pubs)
	s.pubs = s.pubs[:0]
	return false
}

// wakeTimer makes the sender's writer come back for held wake-ups: armed
// when a write leaves some held, it queues a flush (a request without an
// entry) after wakeHold.
type wakeTimer struct {
	queue func(*request) // the sender's
	hold  time.Duration  // the streams' (heldWakes.hold)
	armed atomic.Bool
}

// arm queues a flush after the hold unless one is already on its way.
func (w *wakeTimer) arm() {
	if w.queue == nil || !w.armed.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(w.hold, func() {
		w.armed.Store(false)
		w.queue(&request{done: make(chan struct{}, 1)})
	})
}
