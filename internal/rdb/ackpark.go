package rdb

import (
	"context"
	"time"
)

// Parked writes. A stream that waits for replicas keeps one WAIT in flight
// (see writeCommands). On a single node the writer waits for it: every Send
// goes to that node anyway. On a Cluster one writer serves every master's
// stream, so waiting there would hold back the Sends of every master behind
// the WAIT of one; a master whose replica is gone (or was just promoted and
// has none yet) would slow the whole Cluster to one write per WAIT timeout.
// A Cluster's stream therefore parks the requests that come while its WAIT
// is out, or while its connection is being dialled (dialAside,
// streamdial.go), and the writer goes on with the other masters. Once the
// WAIT answers (or its connection fails, or a second past its timeout
// passes), or the dial is over, a goroutine brings the writer back
// (sendCluster's kick), which writes the parked requests in one write, in
// the order they came.

// parkGrace is how long past its timeout a WAIT may stay unanswered before
// the requests parked behind it are written anyway (the single node's writer
// waits as long; see writeCommands).
const parkGrace = time.Second

// park returns the requests to write now: none while the stream's last WAIT
// is out or its connection is being dialled (batch is kept, after those
// parked before), else those parked before, then batch. It is called by the
// writer, on a stream that parks (s.kick set).
func (s *sendStream) park(batch []*request) []*request {
	if s.asideBusy() || s.ackOut() || s.dialAside() {
		s.parked = append(s.parked, batch...)
		return nil
	}
	if len(s.parked) == 0 {
		return batch
	}
	s.parked = append(s.parked, batch...)
	out := dropEnded(s.parked)
	s.parked = nil
	return out
}

// ackOut reports whether the stream's last WAIT is out; if so, a goroutine
// brings the writer back once it is done (one per WAIT).
func (s *sendStream) ackOut() bool {
	g := s.lastAck
	if g == nil || g.done() {
		return false
	}
	if !g.watched {
		g.watched = true
		kick := s.kick
		go func() {
			g.awaitDue(context.Background())
			kick()
		}()
	}
	return true
}

// writeParked writes the requests parked on s whose WAIT has since
// answered and whose connection is up; it reports whether some are still
// parked.
func (s *sendStream) writeParked() bool {
	if len(s.parked) == 0 {
		return false
	}
	s.write(nil)
	return len(s.parked) > 0
}

// done reports whether g's WAIT answered, its connection failed, or it is
// past due (its timeout and parkGrace).
func (g *ackGroup) done() bool {
	select {
	case <-g.settled:
		return true
	default:
		return !time.Now().Before(g.due)
	}
}

// awaitDue waits until g's WAIT answered or its connection failed, until
// it is due (g.due), or until ctx ends.
func (g *ackGroup) awaitDue(ctx context.Context) {
	d := time.Until(g.due)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-g.settled:
	case <-timer.C:
	case <-ctx.Done():
	}
}

// closeParked writes the requests parked on s once their WAIT answers or is
// past due and a dial under way is over, or fails them with ErrClosed if
// ctx ends first (the sender is closing).
func (s *sendStream) closeParked(ctx context.Context) {
	for len(s.parked) > 0 {
		if ctx.Err() != nil {
			for _, r := range s.parked {
				r.finish(ErrClosed)
			}
			clear(s.parked)
			s.parked = nil
			return
		}
		s.awaitAside(ctx)
		if g := s.lastAck; g != nil {
			g.awaitDue(ctx)
		}
		s.awaitDial(ctx)
		s.writeParked()
	}
}
