package rdb

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmq-go/rmq/internal/wait"
)

// The send path of one message: Broker.Send hands its entry to the sender,
// which queues it, elects a writer for what is queued, waits for the outcome
// and sends it again after a retryable failure. The writer puts the queue on
// the wire through the sender's strategy: the full-duplex stream on a single
// node (sendstream.go, on streamconn.go, resp.go, spinread.go), go-redis
// pipelines otherwise (sendpipe.go). Each write publishes the wake-ups of its
// entries after them (wakeset.go). The README's Sending section tells why.

// SendCounts are what a sender counts; the client exports them all.
// Sent, added to by the stream's reader at each reply, has a cache line of
// its own, away from the writer's Writes and from its neighbours.
type SendCounts struct {
	_       [56]byte
	Sent    atomic.Int64 // entries stored by Send and Enqueue
	_       [56]byte
	Retries atomic.Int64 // Sends written again after a retryable failure
	Writes  atomic.Int64 // writes of queued Sends (stream writes or pipelines; not the writer's returns for held wake-ups or parked Sends)
	Written atomic.Int64 // Sends in those writes, retries included: Written/Writes is the Sends per write
	// Abandoned counts Sends left unwritten because their context ended
	// while they were queued (dropEnded).
	Abandoned atomic.Int64
}

// ErrClosed is the outcome of Sends after Close.
var ErrClosed = errors.New("rdb: sender closed")

// ErrClosedInFlight is the outcome of Sends whose commands were written but
// whose replies Close stopped waiting for (its ctx ended): Redis may have
// run them. It wraps ErrClosed.
var ErrClosedInFlight = fmt.Errorf("%w: written before the close, reply not awaited; Redis may have stored it", ErrClosed)

// strategy puts batches of queued Sends on the wire. The sender decides who
// writes and when; a strategy decides how: which connection carries which
// entry, what follows the entries, and what a reply means.
type strategy interface {
	// write sends batch and completes every request in it exactly once
	// (request.Complete when stored, else request.finish): before write
	// returns, or later from a reader goroutine if the strategy is duplex.
	// batch is not kept.
	write(batch []*request)
	// duplex reports whether write returns before the replies arrive, so that
	// a write costs no round trip.
	duplex() bool
	// inFlight reports whether written commands await replies (duplex only).
	inFlight() bool
	// retryAfter reports whether a Send whose write failed with err, after
	// attempt earlier retries, goes again, and after what pause.
	retryAfter(err error, attempt int) (time.Duration, bool)
	// close waits up to ctx for the replies in flight, then fails the rest
	// and closes the strategy's connections; later writes fail with ErrClosed.
	close(ctx context.Context)
}

// gatherer is a duplex strategy whose elected writers yield more than once
// before they write while commands are in flight.
type gatherer interface {
	electYields() int
}

// blocker is a duplex strategy that can tell when its next write may wait
// (a dial, a WAIT for replicas, a server that stopped reading): a Send whose
// ctx can end then leaves the write to a goroutine, so that it returns when
// its ctx ends. Asked by the elected writer only.
type blocker interface {
	mayBlock() bool
}

const (
	// maxWriterRounds is how many writes a Send elected writer of a duplex
	// strategy makes before it hands the role to a goroutine and returns to
	// its own reply.
	maxWriterRounds = 4
	// maxPipelines is how many pipelines of queued Sends may be in flight.
	maxPipelines = 2
	// gatherYields bounds how often a pipeline writer yields to let senders
	// join its next batch.
	gatherYields = 4
)

// sender queues concurrent Sends and elects their writers.
//
// With a duplex strategy there is one writer at a time: a Send that finds
// no writer writes everything queued itself, and whoever writes takes what
// queued meanwhile, so writes grow with the load while a lone Send goes out
// at once. A Send elected while commands are in flight yields first (once,
// or as often as a gatherer strategy says), so that the senders just woken
// by their replies join its write.
//
// Otherwise each write waits a round trip, so writers are goroutines (at
// most maxPipelines, started on demand, gone when the queue is empty), each
// batch at most maxPipeline. Senders woken by one pipeline usually send
// again at once: before taking the next batch, a writer yields a few times
// while fewer requests wait than its last batch carried. A lone Send never
// waits, since its batch was one.
type sender struct {
	strategy strategy
	duplex   bool
	writers  int // writers at work at once, at most
	counts   *SendCounts
	// electYields is how often a Send elected writer yields first while
	// commands are in flight (duplex only).
	electYields int
	blocker     blocker // nil if the strategy is not one

	mu      sync.Mutex
	pending []*request   // queued, not yet taken by a writer
	working int          // writers at work; > 0 whenever pending is not empty
	spare   [][]*request // batch buffers of writers not at work
	closed  bool
}

func newSender(st strategy, counts *SendCounts) *sender {
	s := &sender{strategy: st, duplex: st.duplex(), writers: 1, counts: counts, electYields: 1}
	if g, ok := st.(gatherer); ok {
		s.electYields = g.electYields()
	}
	s.blocker, _ = st.(blocker)
	if !s.duplex {
		s.writers = maxPipelines
	}
	return s
}

// request is one Send on its way to Redis.
type request struct {
	entry Entry
	// ctx is the Send's: one that ended before its request was written
	// leaves it unwritten (see dropEnded).
	ctx    context.Context
	err    error
	done   chan struct{} // capacity 1: signalled once per write, with err set
	counts *SendCounts
}

// requestPool recycles requests (with their channels).
var requestPool = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

// Complete implements Completer: the reply to the request's command.
func (r *request) Complete(err error) {
	if Stored(err) {
		r.counts.Sent.Add(1)
		if c := r.entry.Counted; c != nil {
			c.Add(1)
		}
	}
	r.finish(err)
}

// Stored reports whether the outcome of an entry's write says that Redis
// stored it: nil, or ErrNotReplicated (stored on the master, not confirmed
// by enough replicas).
func Stored(err error) bool { return err == nil || errors.Is(err, ErrNotReplicated) }

// finish records the outcome and wakes the Send waiting for it.
func (r *request) finish(err error) {
	r.err = err
	r.done <- struct{}{}
}

// send stores e: it queues e and waits for the outcome, again after a
// failure as often as the strategy says (the command may have run before the
// failure; running it twice stores the same entry). If ctx ends first it
// returns ctx.Err(). A resend that Close refuses returns ErrClosedInFlight:
// the failed write may have run.
func (s *sender) send(ctx context.Context, e Entry) error {
	if err := ctx.Err(); err != nil {
		s.counts.Abandoned.Add(1) // never queued, as a writer drops it (dropEnded)
		return err
	}
	r := requestPool.Get().(*request)
	r.entry, r.counts, r.ctx = e, s.counts, ctx
	retries, deadWrites := 0, 0
	for {
		s.queue(r)
		select {
		case <-r.done:
		case <-ctx.Done():
			return ctx.Err() // r stays with its writer or reader and is not recycled
		}
		err := r.err
		resent := retries+deadWrites > 0 // an earlier write failed, and may have run
		var pause time.Duration
		again := false
		if err != nil {
			// A write that found the connection broken spends no retry (up
			// to maxDeadWrites times), as go-redis discards a dead pooled
			// connection before use: it asks as for the last retry spent.
			if deadWrite(err) && deadWrites < maxDeadWrites {
				deadWrites++
			} else {
				retries++
			}
			pause, again = s.strategy.retryAfter(err, max(retries-1, 0))
			r.entry.redirectTo(err)
		}
		if !again {
			*r = request{done: r.done}
			requestPool.Put(r)
			if resent && err == ErrClosed {
				err = ErrClosedInFlight // Close refused the resend
			}
			return err
		}
		s.counts.Retries.Add(1)
		if wait.Sleep(ctx, pause); ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// queue adds r to the queue and elects a writer if one may start.
func (s *sender) queue(r *request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		r.finish(ErrClosed)
		return
	}
	s.pending = append(s.pending, r)
	if s.working == s.writers {
		s.mu.Unlock()
		return
	}
	s.working++
	s.mu.Unlock()
	if !s.duplex || (r.ctx != nil && r.ctx.Done() != nil && s.blocker != nil && s.blocker.mayBlock()) {
		// A Send whose ctx can end does not write itself when the write may
		// wait (blocker): it must return when its ctx ends. Otherwise it
		// writes at once, gathering the Sends that come meanwhile.
		go s.writeQueued(-1)
		return
	}
	if s.strategy.inFlight() {
		// Redis has work meanwhile: yield, so that the senders already
		// runnable (woken by the replies just read) join this write. An idle
		// connection is written at once.
		for range s.electYields {
			runtime.Gosched()
		}
	}
	if !s.writeQueued(maxWriterRounds) {
		go s.writeQueued(-1)
	}
}

// writeQueued writes what is queued, at most rounds times (no limit if
// negative), and gives up the writer role when the queue is empty. It
// returns false if it stopped with requests still queued, keeping the role.
func (s *sender) writeQueued(rounds int) bool {
	var batch []*request
	last := 0
	for i := 0; rounds < 0 || i < rounds; i++ {
		s.mu.Lock()
		if i == 0 && len(s.spare) > 0 {
			batch = s.spare[len(s.spare)-1]
			s.spare = s.spare[:len(s.spare)-1]
		}
		n := len(s.pending)
		if !s.duplex {
			for yields := 0; n < last && yields < gatherYields; yields++ {
				s.mu.Unlock()
				runtime.Gosched()
				s.mu.Lock()
				n = len(s.pending)
			}
			n = min(n, maxPipeline)
		}
		if n == 0 {
			s.working--
			s.spare = append(s.spare, batch)
			s.mu.Unlock()
			return true
		}
		batch = append(batch[:0], s.pending[:n]...)
		rest := copy(s.pending, s.pending[n:])
		clear(s.pending[rest:])
		s.pending = s.pending[:rest]
		s.mu.Unlock()
		last = n
		if batch = dropEnded(batch); len(batch) > 0 {
			if n := sendsIn(batch); n > 0 {
				s.counts.Writes.Add(1)
				s.counts.Written.Add(int64(n))
			}
			s.strategy.write(batch)
		}
		clear(batch)
	}
	s.mu.Lock()
	s.spare = append(s.spare, batch)
	s.mu.Unlock()
	return false
}

// close refuses further Sends, waits up to ctx until the queue is written,
// then closes the strategy, which waits (within ctx) for the replies. If ctx
// ends first, what is still queued fails with ErrClosed unsent, and close
// still waits for the writes under way (a pipeline ends within the go-redis
// client's timeouts; a stream write does not wait for replies), so that no
// writer touches Redis once it returns.
func (s *sender) close(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	for s.writing() && ctx.Err() == nil {
		wait.Sleep(ctx, time.Millisecond)
	}
	if s.writing() {
		s.mu.Lock()
		queued := s.pending
		s.pending = nil
		s.mu.Unlock()
		for _, r := range queued {
			r.finish(ErrClosed)
		}
		for s.writing() {
			time.Sleep(time.Millisecond)
		}
	}
	s.strategy.close(ctx)
}

// writing reports whether a writer is at work.
func (s *sender) writing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.working > 0
}

// dropEnded completes, with their context's error, the requests of batch
// whose Send's context ended before they were written, and returns the
// others, in order, in batch's array. The Send has returned ctx.Err()
// (or returns it now), so writing its entry could only store a message its
// caller was told may not be stored, and would spend Redis's time on it: a
// sender that falls behind (a dead master's retries, a starved process)
// catches up on live Sends instead.
func dropEnded(batch []*request) []*request {
	live := batch[:0]
	for _, r := range batch {
		if r.ctx != nil {
			if err := r.ctx.Err(); err != nil {
				r.counts.Abandoned.Add(1)
				r.finish(err)
				continue
			}
		}
		live = append(live, r)
	}
	clear(batch[len(live):])
	return live
}

// sendsIn counts the Sends in batch, leaving out the requests that only
// bring the writer back (the Cluster's wake timer and kicks): a batch of
// those alone is no write of SendCounts.Writes.
func sendsIn(batch []*request) int {
	n := 0
	for _, r := range batch {
		if r.entry.Key != "" {
			n++
		}
	}
	return n
}
