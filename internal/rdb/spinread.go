package rdb

import (
	"net"
	"runtime"
	"sync/atomic"
)

// The send stream's reader, while replies are owed, polls the socket up to
// maxSpinPolls times, yielding the processor between polls, before it parks
// in the runtime's network poller (why, and what it was measured against:
// the README's Sending section). A poll that finds data restores the full
// budget; a reader whose polls run dry halves it, down to minSpinPolls, so
// with a slow or stalled server it soon parks at once. Nothing is polled
// while no reply is owed, and connections that expose no socket (TLS) always
// park.

const (
	maxSpinPolls = 256 // polls before parking, at most (each a read system call and a yield)
	minSpinPolls = 2   // polls before parking, at least, to notice when load returns
)

// spinReader is the io.Reader under a streamConn's bufio.Reader.
type spinReader struct {
	nc    net.Conn
	owed  *atomic.Int64 // replies owed; polling only while > 0
	poll  func(p []byte) (n int, ok bool)
	polls int // the current budget
	most  int // the full budget
}

// newSpinReader returns the reader of nc polling up to most times (no polls
// if most is 0).
func newSpinReader(nc net.Conn, owed *atomic.Int64, most int) *spinReader {
	r := &spinReader{nc: nc, owed: owed, polls: most, most: most}
	if most > 0 {
		r.poll = socketPoller(nc)
	}
	return r
}

// Read returns what the socket holds, polling it first while replies are
// owed, then reads from the connection as usual (deadlines apply there).
func (r *spinReader) Read(p []byte) (int, error) {
	if r.poll != nil && r.owed.Load() > 0 {
		for i := 0; i < r.polls; i++ {
			n, ok := r.poll(p)
			if !ok {
				break // closed, failed or at end: the read below says which
			}
			if n > 0 {
				r.polls = r.most
				return n, nil
			}
			runtime.Gosched()
		}
		r.polls = max(r.polls/2, min(minSpinPolls, r.most))
	}
	return r.nc.Read(p)
}
