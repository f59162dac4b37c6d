package rdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// dial connects and runs the handshake: AUTH, SELECT and CLIENT SETNAME as
// the options ask, each reply checked.
func (s *sendStream) dial() (*streamConn, error) {
	return dialConn(context.Background(), s.opt, s.spin)
}

// The pause after a failed dial, during which writes fail at once with that
// failure: from minDialWait, doubled per failure up to maxDialWait, reset by
// a dial that succeeds. Without it a dead node was dialled by every write
// carrying its Sends (each one's retries included), which in a Cluster's
// failover cost the one writer of every master's stream most of its time
// (15 % of the process's CPU under -race while the master was down), and
// the other masters' Sends waited for it. go-redis's pool likewise stops
// dialling a node that keeps refusing and tries again once a second; the
// pause here is shorter, so that a node back (or a Sentinel's new master,
// asked for by each dial) is reached within 100 ms.
const (
	minDialWait = 5 * time.Millisecond
	maxDialWait = 100 * time.Millisecond
)

// dialAside reports whether the stream's connection is being dialled, by a
// goroutine of its own, starting that dial if the stream has no usable
// connection (and no failed dial's pause holds): a Cluster's stream (s.kick
// set), whose writer serves every master, so that a master that does not
// answer (frozen, or its host gone) holds back only its own Sends. The
// goroutine brings the writer back once the dial is over.
func (s *sendStream) dialAside() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dialing != nil {
		return true
	}
	now := time.Now()
	if s.closed || (s.conn != nil && s.conn.usable(now)) || (s.dialErr != nil && now.Before(s.nextDial)) {
		return false // the write goes on: to the connection, or failing at once
	}
	done := make(chan struct{})
	s.dialing = done
	go func() {
		cn, err := s.dial()
		s.mu.Lock()
		s.dialing = nil
		switch {
		case err != nil:
			s.dialFailed(err)
		case s.closed:
			cn.fail(ErrClosed)
		default:
			s.dialErr, s.dialWait = nil, 0
			s.conn = cn
			s.reader.Go(cn.readReplies)
		}
		s.mu.Unlock()
		close(done)
		s.kick()
	}()
	return true
}

// errDialAside fails a write on a stream that parks whose connection failed
// after park looked: nothing of it went out, the connection is being
// dialled again aside, and the sender sends the requests again after the
// first retry's pause without spending a retry (deadWrite), so that they
// park behind the dial.
var errDialAside = errors.New("rdb: connection lost; dialling again")

// writeConn returns the connection a write goes on: current's on a stream
// that does not park (a single node's). A stream that parks (a Cluster's,
// whose one writer serves every master) never dials in the writer: a
// connection that failed since park looked (a frozen master's read timeout,
// say) is dialled again aside (dialAside) and the write fails with
// errDialAside, or at once with the last dial's failure while its pause
// holds, or ErrClosed.
func (s *sendStream) writeConn() (*streamConn, error) {
	if s.kick == nil {
		return s.current()
	}
	s.mu.Lock()
	cn := s.conn
	ok := s.dialing == nil && !s.closed && cn != nil && cn.usable(time.Now())
	s.mu.Unlock()
	if ok {
		return cn, nil
	}
	if s.dialAside() {
		return nil, errDialAside
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ErrClosed
	case s.dialErr != nil:
		return nil, s.dialErr
	}
	return nil, errDialAside
}

// awaitDial waits until a dial under way (dialAside) is over, or ctx ends.
func (s *sendStream) awaitDial(ctx context.Context) {
	s.mu.Lock()
	done := s.dialing
	s.mu.Unlock()
	if done != nil {
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
}

// dialFailed records a failed dial and starts the pause. Called under s.mu.
func (s *sendStream) dialFailed(err error) {
	s.dialWait = min(max(2*s.dialWait, minDialWait), maxDialWait)
	s.dialErr, s.nextDial = err, time.Now().Add(s.dialWait)
}

// redial dials unless a dial failed less than the pause ago, in which case
// it returns that failure. Called under s.mu.
func (s *sendStream) redial(now time.Time) (*streamConn, error) {
	if s.dialErr != nil && now.Before(s.nextDial) {
		return nil, s.dialErr
	}
	cn, err := s.dial()
	if err != nil {
		s.dialFailed(err)
		return nil, err
	}
	s.dialErr, s.dialWait = nil, 0
	return cn, nil
}

// dialConn connects to the node of o and runs the handshake its options ask
// for, unless ctx ends first; the reader polls up to spin times while
// replies are owed.
func dialConn(ctx context.Context, o *redis.Options, spin int) (*streamConn, error) {
	if o.DialTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.DialTimeout)
		defer cancel()
	}
	nc, err := o.Dialer(ctx, o.Network, o.Addr)
	if err != nil {
		return nil, fmt.Errorf("rdb: dial %s: %w", o.Addr, err)
	}
	cn := newStreamConn(nc, o.ReadTimeout, spin)
	cn.lastUsed = time.Now()
	cn.maxIdle = o.ConnMaxIdleTime
	if o.ConnMaxLifetime > 0 {
		life := o.ConnMaxLifetime
		if j := o.ConnMaxLifetimeJitter; j > 0 {
			life += rand.N(2*j+1) - j
		}
		cn.retireAt = cn.lastUsed.Add(life)
	}
	cmds, err := handshake(ctx, o)
	if err == nil {
		err = cn.handshake(ctx, cmds)
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("rdb: connect to %s: %w", o.Addr, err)
	}
	return cn, nil
}

// handshake returns the commands that prepare a new connection to the node
// of o.
func handshake(ctx context.Context, o *redis.Options) ([][]string, error) {
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
