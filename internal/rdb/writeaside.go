package rdb

import (
	"context"
	"slices"
	"time"
)

// Writes aside. A Cluster's one writer serves every master's stream in
// turn, and a write blocks once the connection's socket is full: a master
// frozen or cut off, its replies not coming, stops reading what is written
// to it, and a large write (megabytes of contents) fills the socket even
// before its replies are late. Were the writer to block there, every
// master's Sends would wait behind that one master's. So a write that may
// block (mayStall) goes in a goroutine of its own, and the requests that
// come for that stream meanwhile park (park), as behind a WAIT or a dial;
// the goroutine brings the writer back once the write is done, which writes
// them in one write. The other masters' writes go on.

// asideBytes is the size of a write, in contents, from which it goes aside:
// a socket's buffers take a few hundred kilobytes before a write blocks.
const asideBytes = 256 << 10

// mayStall reports whether writing batch may block the writer: its
// contents are large, or the connection has a write unanswered for
// stallAfter (streamConn.stalled).
func (s *sendStream) mayStall(batch []*request) bool {
	n := 0
	for _, r := range batch {
		n += len(r.entry.Member)
	}
	if n >= asideBytes {
		return true
	}
	cn := s.liveConn()
	return cn != nil && cn.stalled(time.Now())
}

// writeAside writes batch in a goroutine of its own, which owns the
// stream's write buffers until it ends (asideBusy), then brings the writer
// back for what parked meanwhile.
func (s *sendStream) writeAside(batch []*request) {
	own := slices.Clone(batch) // the writer reuses its batch
	done := make(chan struct{})
	s.mu.Lock()
	s.aside = done
	s.mu.Unlock()
	s.asides.Go(func() {
		s.writeNow(own)
		s.mu.Lock()
		s.aside = nil
		s.mu.Unlock()
		close(done)
		s.kick()
	})
}

// asideBusy reports whether a write aside is under way.
func (s *sendStream) asideBusy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aside != nil
}

// awaitAside waits until a write aside under way is over, or ctx ends.
func (s *sendStream) awaitAside(ctx context.Context) {
	s.mu.Lock()
	done := s.aside
	s.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
}
