package rdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/wait"
)

// Completer learns the outcome of one command written to a Stream: nil once
// Redis executed it, its error reply, or the failure of the connection (the
// command may then have run or not). Complete is called exactly once, from
// the Stream's reader goroutine or from the writer, never under a lock.
type Completer interface {
	Complete(err error)
}

// ErrStreamClosed is the outcome of writes to a closed Stream.
var ErrStreamClosed = errors.New("rdb: stream closed")

// Stream is one connection of its own to a single Redis node, used full
// duplex: a write puts its commands on the wire without waiting for earlier
// replies, and a reader goroutine hands each reply, in order, to the
// Completer written with its command. Concurrent senders thus share one
// connection whose commands Redis reads in whatever runs it finds, instead
// of one round trip per pipeline.
//
// Write must not be called concurrently; the caller serializes writers. The
// connection is dialled on the first Write and again after a failure, with
// the dialer, credentials, database and timeouts of the go-redis options it
// was made from; like a pooled connection it is replaced once idle for
// ConnMaxIdleTime or older than ConnMaxLifetime (at a write that finds
// nothing in flight). go-redis hooks do not see its commands.
type Stream struct {
	opt *redis.Options

	mu     sync.Mutex
	conn   *streamConn // nil until dialled
	closed bool
	reader sync.WaitGroup

	buf  []byte      // the encoding buffer (writer only)
	done []Completer // the completers of one write (writer only)
}

// NewStream returns the Stream of the node that client talks to, or nil if
// client is not a single-node client, or has options a Stream cannot honour
// (an OnConnect hook, streaming credentials, a rate limiter).
func NewStream(client redis.UniversalClient) *Stream {
	c, ok := client.(*redis.Client)
	if !ok {
		return nil
	}
	opt := c.Options()
	if opt.Dialer == nil || opt.OnConnect != nil || opt.StreamingCredentialsProvider != nil || opt.Limiter != nil {
		return nil
	}
	return &Stream{opt: opt}
}

// Write sends ZADD for each entry (entries[i] completes done[i]), then
// PUBLISH for each publication (each completes pubDone), on the current
// connection, dialling one if there is none. Every completer is completed
// exactly once, whatever happens.
func (s *Stream) Write(entries []Entry, done []Completer, pubs []Publication, pubDone Completer) {
	all := append(s.done[:0], done...)
	for range pubs {
		all = append(all, pubDone)
	}
	s.done = all[:0]
	cn, err := s.current()
	if err != nil {
		completeAll(all, err)
		return
	}
	b := s.buf[:0]
	for i := range entries {
		b = appendZAdd(b, &entries[i])
	}
	for i := range pubs {
		b = appendPublish(b, &pubs[i])
	}
	s.buf = b
	if cn.expect(all) != nil {
		// The connection failed before anything of this write went out (the
		// server closed it while idle): nothing ran, so a new one may carry it.
		if cn, err = s.current(); err == nil {
			err = cn.expect(all)
		}
		if err != nil {
			completeAll(all, err)
			return
		}
	}
	cn.write(b, s.opt.WriteTimeout)
}

// InFlight reports whether commands written to the stream await replies.
func (s *Stream) InFlight() bool {
	s.mu.Lock()
	cn := s.conn
	s.mu.Unlock()
	return cn != nil && cn.outstanding.Load() > 0
}

// current returns the live connection, dialling one if needed.
func (s *Stream) current() (*streamConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrStreamClosed
	}
	if s.conn != nil && s.conn.usable(time.Now()) {
		return s.conn, nil
	}
	cn, err := s.dial()
	if err != nil {
		return nil, err
	}
	s.conn = cn
	s.reader.Go(cn.readReplies)
	return cn, nil
}

// dial connects and runs the handshake: AUTH, SELECT and CLIENT SETNAME as
// the options ask, each reply checked.
func (s *Stream) dial() (*streamConn, error) {
	o := s.opt
	ctx := context.Background()
	if o.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.DialTimeout)
		defer cancel()
	}
	nc, err := o.Dialer(ctx, o.Network, o.Addr)
	if err != nil {
		return nil, fmt.Errorf("rdb: dial %s: %w", o.Addr, err)
	}
	cn := newStreamConn(nc, o.ReadTimeout)
	cn.lastUsed = time.Now()
	cn.maxIdle = o.ConnMaxIdleTime
	if o.ConnMaxLifetime > 0 {
		life := o.ConnMaxLifetime
		if j := o.ConnMaxLifetimeJitter; j > 0 {
			life += rand.N(2*j+1) - j
		}
		cn.retireAt = cn.lastUsed.Add(life)
	}
	cmds, err := s.handshake(ctx)
	if err == nil {
		err = cn.handshake(ctx, cmds)
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("rdb: connect to %s: %w", o.Addr, err)
	}
	return cn, nil
}

// handshake returns the commands that prepare a new connection.
func (s *Stream) handshake(ctx context.Context) ([][]string, error) {
	o := s.opt
	var cmds [][]string
	user, pass := o.Username, o.Password
	switch {
	case o.CredentialsProviderContext != nil:
		u, p, err := o.CredentialsProviderContext(ctx)
		if err != nil {
			return nil, fmt.Errorf("credentials: %w", err)
		}
		user, pass = u, p
	case o.CredentialsProvider != nil:
		user, pass = o.CredentialsProvider()
	}
	switch {
	case pass != "" && user != "":
		cmds = append(cmds, []string{"AUTH", user, pass})
	case pass != "":
		cmds = append(cmds, []string{"AUTH", pass})
	}
	if o.DB != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(o.DB)})
	}
	if o.ClientName != "" {
		cmds = append(cmds, []string{"CLIENT", "SETNAME", o.ClientName})
	}
	return cmds, nil
}

// Close refuses further writes, waits until every command written has its
// reply or ctx ends, then fails whatever is still in flight with
// ErrStreamClosed, closes the connection and waits for the reader goroutine.
func (s *Stream) Close(ctx context.Context) {
	s.mu.Lock()
	s.closed = true
	cn := s.conn
	s.mu.Unlock()
	if cn != nil {
		for cn.outstanding.Load() > 0 && ctx.Err() == nil {
			wait.Sleep(ctx, time.Millisecond)
		}
		cn.fail(ErrStreamClosed)
	}
	s.reader.Wait()
}

func completeAll(all []Completer, err error) {
	for _, c := range all {
		c.Complete(err)
	}
}
