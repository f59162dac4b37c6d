package rdb

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/wait"
)

// Completer learns the outcome of one command written to the send stream:
// nil once Redis executed it, its error reply, or the failure of the
// connection (the command may then have run or not). Complete is called
// exactly once, from the stream's reader goroutine or from the writer, never
// under a lock.
type Completer interface {
	Complete(err error)
}

// sendStream is the full-duplex strategy (see the README's Sending section):
// one connection of its own to a single Redis node, on which a write puts its
// commands (a ZADD per entry, then a PUBLISH per wake-up) without waiting for
// earlier replies, while a reader goroutine (streamConn.readReplies) hands
// each reply, in order, to the Completer written with its command.
//
// The sender elects one writer at a time, which owns the buffers below. The
// connection is dialled on the first write and again after a failure, with
// the dialer, credentials, database and timeouts of the go-redis options it
// was made from (streamdial.go); like a pooled connection it is replaced once
// idle for ConnMaxIdleTime or older than ConnMaxLifetime (at a write that
// finds nothing in flight). go-redis hooks do not see its commands.
type sendStream struct {
	opt     *redis.Options
	retries retryPolicy  // the go-redis client's
	pubDone *wakeOutcome // the outcome of every wake-up publication
	// pubTo, if set, returns the Completer of a publication in place of
	// pubDone's (tests).
	pubTo func(*Publication) Completer
	ack   ReplicaAck // each write waits for replicas after its entries

	mu     sync.Mutex
	conn   *streamConn // nil until dialled
	closed bool
	reader sync.WaitGroup

	// The writer's buffers.
	entries []Entry
	done    []Completer // the requests of one write
	wakes   wakeSet
	pubs    []Publication
	payload []byte      // the wake-ups' payloads
	all     []Completer // the completers of one write, publications included
	buf     []byte      // the encoding buffer
	holding *heldWakes  // non-nil: wake-ups wait for company (sendcluster.go)
	sharded bool        // wake-ups go to sharded channels (a Cluster's master)
	spin    int         // the reader's polls before parking (spinread.go)
	lastAck *ackGroup   // the last write's wait for replicas (see writeCommands)
	// kick, if set, brings the writer back to write what is parked (a
	// Cluster's stream: it parks, ackpark.go); parked are the requests
	// waiting for lastAck.
	kick   func()
	parked []*request
	// lastWrite is when the writer last gave a Cluster's stream requests
	// (sendCluster.pruneIdle).
	lastWrite time.Time

	// After a failed dial (streamdial.go, under mu): the failure, the pause
	// before the next dial, and when that may be.
	dialErr  error
	dialWait time.Duration
	nextDial time.Time
	// dialing is closed when the dial under way ends; nil while none is
	// (dialAside, a Cluster's stream).
	dialing chan struct{}
	// aside is closed when the write under way in a goroutine of its own
	// ends; nil while none is (writeAside, a Cluster's stream). asides
	// counts those goroutines, for close.
	aside  chan struct{}
	asides sync.WaitGroup
}

// newSendStream returns the stream of the node that client talks to, or nil
// if client is not a single-node client, is Sentinel's failover client, or
// has options the stream cannot honour (an OnConnect hook, streaming
// credentials, a rate limiter). Failed wake-up publications complete wakes.
//
// The failover client drops its pooled connections to the old master when
// a sentinel announces a new one (+switch-master); the stream's own
// connection would not hear of it, and a demoted master that still answers
// (a planned failover, or one cut off from the sentinels alone) takes its
// writes until the sentinels make it a replica, seconds later, which throws
// them away: acknowledged Sends lost. So Sends of a failover client go
// through its pool (go-redis pipelines).
func newSendStream(client redis.UniversalClient, ack ReplicaAck, wakes *wakeOutcome) *sendStream {
	c, ok := client.(*redis.Client)
	if !ok || isFailoverClient(c) {
		return nil
	}
	return newStreamOn(c.Options(), ack, wakes)
}

// isFailoverClient reports whether c is Sentinel's failover client
// (redis.NewFailoverClient, or NewUniversalClient with a MasterName), whose
// options name no node: go-redis gives them the address "FailoverClient".
func isFailoverClient(c *redis.Client) bool { return c.Options().Addr == "FailoverClient" }

// newStreamOn returns the stream of the node of opt, or nil if opt has
// options the stream cannot honour (see newSendStream).
func newStreamOn(opt *redis.Options, ack ReplicaAck, wakes *wakeOutcome) *sendStream {
	if opt.Dialer == nil || opt.OnConnect != nil || opt.StreamingCredentialsProvider != nil || opt.Limiter != nil {
		return nil
	}
	return &sendStream{opt: opt, retries: clientRetries(opt), pubDone: wakes, ack: ack, spin: maxSpinPolls}
}

// write implements strategy: the batch's entries, then their wake-ups (or,
// with held wake-ups, those due: see holdWakes).
func (s *sendStream) write(batch []*request) {
	if s.kick != nil {
		if batch = s.park(batch); len(batch) == 0 {
			return
		}
		if s.mayStall(batch) {
			s.writeAside(batch) // writeaside.go
			return
		}
	}
	s.writeNow(batch)
}

// writeNow writes batch on the connection (write, once parking is done).
func (s *sendStream) writeNow(batch []*request) {
	for _, r := range batch {
		s.entries = append(s.entries, r.entry)
		s.done = append(s.done, r)
	}
	if s.holding != nil {
		s.holdWakes(s.entries)
	} else {
		s.pubs, s.payload = entryWakes(&s.wakes, s.entries, s.pubs, s.payload)
	}
	s.writeCommands(s.entries, s.done, s.pubs)
	clear(s.entries)
	clear(s.done)
	clear(s.pubs)
	s.entries, s.done, s.pubs = s.entries[:0], s.done[:0], s.pubs[:0]
}

// duplex implements strategy.
func (s *sendStream) duplex() bool { return true }

// mayBlock implements blocker: the next write waits for a dial (no live
// connection), for the last WAIT (writeCommands, on a stream that does not
// park), or on a socket that may be full, the oldest unanswered write being
// older than stallAfter (the server frozen or cut off).
func (s *sendStream) mayBlock() bool {
	if s.kick == nil && s.lastAck != nil && !s.lastAck.done() {
		return true
	}
	cn := s.liveConn()
	return cn == nil || cn.stalled(time.Now())
}

// liveConn returns the stream's connection as it stands (nil before the
// first dial), without dialling.
func (s *sendStream) liveConn() *streamConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}

// retryAfter implements strategy: as the go-redis client retries its
// commands.
func (s *sendStream) retryAfter(err error, attempt int) (time.Duration, bool) {
	return s.retries.after(err, attempt)
}

// writeCommands sends ZADD for each entry (entries[i] completes done[i];
// behind ASKING where Entry.Asking says so, redirect.go),
// then WAIT when the stream waits for replicas (done[i] then completes once
// WAIT answered), then PUBLISH for each publication (each completes its
// topic's pubOutcome),
// on the current connection, dialling one if there is none (aside, on a
// stream that parks: writeConn). Every completer is completed exactly once,
// whatever happens.
//
// A write that waits for replicas first waits until the previous one's WAIT
// answered (within its timeout, or its connection's failure; at most a second
// past the timeout, should the server not answer; a Cluster's stream parks
// instead, ackpark.go): Redis runs a
// connection's commands in turn, so WAITs written behind a blocked one would
// each block in their turn, and while no replica answers, every Send would
// wait for all the WAITs queued before it, and go on waiting once a replica
// is back. Meanwhile the Sends that come queue for the next write.
func (s *sendStream) writeCommands(entries []Entry, done []Completer, pubs []Publication) {
	all := s.all[:0]
	var g *ackGroup
	if s.ack.on() && len(done) > 0 {
		if s.lastAck != nil && s.kick == nil { // a stream that parks waited in park
			s.lastAck.await(s.ack.Timeout + parkGrace)
		}
		g = newAckGroup(s.ack, done)
		s.lastAck = g
	}
	for i := range done { // each ZADD (behind ASKING after an ASK: its reply ignored)
		if entries[i].Asking {
			all = append(all, ignoreReply{})
		}
		if g != nil {
			all = append(all, g)
		} else {
			all = append(all, done[i])
		}
	}
	if g != nil {
		all = append(all, g) // the WAIT
	}
	for i := range pubs {
		if s.pubTo != nil {
			all = append(all, s.pubTo(&pubs[i]))
		} else {
			all = append(all, s.pubDone.completerOf(&pubs[i]))
		}
	}
	s.all = all[:0]
	cn, err := s.writeConn()
	if err != nil {
		completeAll(all, err)
		return
	}
	b := s.buf[:0]
	for i := range entries {
		if entries[i].Asking {
			b = append(b, "*1\r\n$6\r\nASKING\r\n"...)
		}
		b = appendZAdd(b, &entries[i])
	}
	if s.ack.on() && len(done) > 0 {
		b = appendWait(b, s.ack)
	}
	sharded := s.sharded && s.pubDone.sharded()
	for i := range pubs {
		b = appendPublish(b, &pubs[i], sharded)
	}
	s.buf = b
	if cn.expect(all) != nil {
		// The connection failed before anything of this write went out (the
		// server closed it while idle): nothing ran, so a new one may carry it.
		if cn, err = s.writeConn(); err == nil {
			err = cn.expect(all)
		}
		if err != nil {
			completeAll(all, err)
			return
		}
	}
	cn.write(b, s.opt.WriteTimeout)
}

// inFlight implements strategy.
func (s *sendStream) inFlight() bool {
	cn := s.liveConn()
	return cn != nil && cn.outstanding.Load() > 0
}

// current returns the live connection, dialling one if needed (not again
// within a short pause after a failed dial: see redial). A dial aside under
// way (a Cluster's stream) is waited for, so that two dials never race to
// be the connection.
func (s *sendStream) current() (*streamConn, error) {
	s.mu.Lock()
	for s.dialing != nil { // a dial aside is under way (dialAside): its outcome first
		d := s.dialing
		s.mu.Unlock()
		<-d
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if s.conn != nil && s.conn.usable(time.Now()) {
		return s.conn, nil
	}
	cn, err := s.redial(time.Now())
	if err != nil {
		return nil, err
	}
	s.conn = cn
	s.reader.Go(cn.readReplies)
	return cn, nil
}

// close implements strategy: it refuses further writes, waits until every
// command written has its reply or ctx ends, then fails whatever is still in
// flight with ErrClosedInFlight (Redis may have run it), closes the
// connection and waits for the reader goroutine.
func (s *sendStream) close(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	cn := s.conn
	s.mu.Unlock()
	if cn != nil {
		for cn.outstanding.Load() > 0 && ctx.Err() == nil {
			wait.Sleep(ctx, time.Millisecond)
		}
		cn.fail(ErrClosedInFlight)
	}
	s.asides.Wait() // a write aside ends once its connection failed
	s.reader.Wait()
}

func completeAll(all []Completer, err error) {
	for _, c := range all {
		c.Complete(err)
	}
}

// ignoreReply completes a command whose reply says nothing (ASKING: a
// refusal shows in the reply of the command behind it).
type ignoreReply struct{}

// Complete implements Completer.
func (ignoreReply) Complete(error) {}
