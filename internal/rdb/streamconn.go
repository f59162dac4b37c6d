package rdb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// streamConn is one connection of the send stream: the commands written and
// not yet answered, in order, and the goroutine that reads their replies.
//
// Every completer is completed exactly once: while it waits in pending, by
// fail (which empties pending); once the reader has taken it, by the reader.
type streamConn struct {
	nc          net.Conn
	rd          *bufio.Reader
	readTimeout time.Duration // > 0: the longest wait for an awaited reply

	retireAt time.Time     // zero, or when the connection is too old to take writes
	maxIdle  time.Duration // > 0: a connection idle this long takes no more writes

	mu       sync.Mutex
	pending  []Completer // written, not yet taken by the reader
	sentAt   time.Time   // when the oldest command in pending was written
	lastUsed time.Time   // when commands were last written
	err      error       // set once the connection failed

	outstanding atomic.Int64 // commands written and not yet completed
}

func newStreamConn(nc net.Conn, readTimeout time.Duration, spin int) *streamConn {
	c := &streamConn{nc: nc, readTimeout: readTimeout}
	c.rd = bufio.NewReaderSize(newSpinReader(nc, &c.outstanding, spin), 64<<10)
	return c
}

// handshake writes cmds and checks every reply, before the reader starts.
// It ends when ctx does: by its deadline, or at once when it is cancelled
// (a listen left, a client closed), where a read of a node out of reach
// would wait for the deadline.
func (c *streamConn) handshake(ctx context.Context, cmds [][]string) (err error) {
	if len(cmds) == 0 {
		return nil
	}
	if d, ok := ctx.Deadline(); ok {
		c.nc.SetDeadline(d)
	}
	cut := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Now()) })
	defer func() {
		if !cut() && err == nil {
			err = context.Cause(ctx) // the deadline may move yet: not to be used
		}
		c.nc.SetDeadline(time.Time{})
	}()
	var b []byte
	for _, cmd := range cmds {
		b = appendCommand(b, cmd...)
	}
	if _, err := c.nc.Write(b); err != nil {
		return err
	}
	for _, cmd := range cmds {
		_, replyErr, err := readReply(c.rd)
		if err != nil {
			return err
		}
		if replyErr != nil {
			return fmt.Errorf("%s: %w", cmd[0], replyErr)
		}
	}
	return nil
}

// errRetired closes a connection past its idle time or lifetime.
var errRetired = errors.New("rdb: connection retired")

// usable reports whether the connection may take the next write. One past
// its idle time or lifetime (the go-redis pool's ConnMaxIdleTime and
// ConnMaxLifetime) is closed instead, once nothing is in flight on it.
func (c *streamConn) usable(now time.Time) bool {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return false
	}
	old := (c.maxIdle > 0 && now.Sub(c.lastUsed) >= c.maxIdle) ||
		(!c.retireAt.IsZero() && !now.Before(c.retireAt))
	c.mu.Unlock()
	if old && c.outstanding.Load() == 0 {
		c.fail(errRetired)
		return false
	}
	return true
}

// expect queues the completers of commands about to be written. On a failed
// connection it returns the failure and takes on nothing.
func (c *streamConn) expect(done []Completer) error {
	c.mu.Lock()
	if err := c.err; err != nil {
		c.mu.Unlock()
		return err
	}
	now := time.Now()
	if len(c.pending) == 0 {
		c.sentAt = now
	}
	c.lastUsed = now
	c.pending = append(c.pending, done...)
	c.outstanding.Add(int64(len(done)))
	c.mu.Unlock()
	return nil
}

// stallAfter is how long the oldest unanswered write of a connection may
// wait for its reply before the server counts as stalled (mayBlock): a
// healthy one answers within milliseconds.
const stallAfter = 50 * time.Millisecond

// stalled reports whether the connection failed or its oldest unanswered
// write has waited stallAfter: a write may then block on a full socket.
func (c *streamConn) stalled(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil || (len(c.pending) > 0 && now.Sub(c.sentAt) >= stallAfter)
}

// write puts b on the wire; a failure fails the connection.
func (c *streamConn) write(b []byte, timeout time.Duration) {
	if timeout > 0 {
		c.nc.SetWriteDeadline(time.Now().Add(timeout))
	}
	if _, err := c.nc.Write(b); err != nil {
		c.fail(fmt.Errorf("rdb: write to redis: %w", err))
	}
}

// fail records err (the first failure wins), closes the connection and
// completes every pending command with the recorded error.
func (c *streamConn) fail(err error) error {
	c.mu.Lock()
	if c.err == nil {
		c.err = err
		c.nc.Close()
	}
	err = c.err
	pending := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.complete(pending, err)
	return err
}

// readReplies hands each reply to the completer of its command, until the
// connection fails. While replies are awaited, a Redis silent for the read
// timeout fails it.
func (c *streamConn) readReplies() {
	var taken []Completer // taken from pending, in order; taken[head:] await replies
	var head int
	var armed time.Time // the read deadline in force
	var progress time.Time
	for {
		if c.rd.Buffered() == 0 {
			// Wait for the next reply without consuming anything, so that a
			// deadline met while idle leaves the reader usable.
			armed = c.armDeadline(armed, head < len(taken), progress)
			if _, err := c.rd.Peek(1); err != nil {
				if isTimeout(err) && !c.overdue(head < len(taken), progress) {
					continue
				}
				c.complete(taken[head:], c.fail(fmt.Errorf("rdb: read from redis: %w", err)))
				return
			}
			if c.readTimeout > 0 {
				progress = time.Now()
				if armed.Sub(progress) < c.readTimeout/2 { // room to read the rest
					armed = progress.Add(c.readTimeout)
					c.nc.SetReadDeadline(armed)
				}
			}
		}
		n, replyErr, err := readReply(c.rd)
		if err != nil {
			c.complete(taken[head:], c.fail(fmt.Errorf("rdb: read from redis: %w", err)))
			return
		}
		if head == len(taken) { // swap buffers, keeping both capacities
			c.mu.Lock()
			taken, c.pending, head = c.pending, taken[:0], 0
			c.mu.Unlock()
			if len(taken) == 0 {
				c.fail(fmt.Errorf("%w: a reply to no command", errProtocol))
				return
			}
		}
		next := taken[head]
		taken[head] = nil
		head++
		if re, ok := replyErr.(ReplyError); ok && re.dropsConnection() {
			// Fail the connection before the sender learns of the refusal,
			// so that its next write cannot land here again.
			err := c.fail(fmt.Errorf("rdb: redis refuses writes: %w", re))
			next.Complete(replyErr)
			c.outstanding.Add(-1)
			c.complete(taken[head:], err)
			return
		}
		if cc, ok := next.(countCompleter); ok {
			cc.CompleteCount(n, replyErr)
		} else {
			next.Complete(replyErr)
		}
		c.outstanding.Add(-1)
		if c.rd.Buffered() > 0 {
			// More replies are here. Let the sender just woken run first on
			// this processor: it queues its next message now, instead of
			// waiting for another thread to be woken to run it.
			runtime.Gosched()
		}
	}
}

// armDeadline sets the read deadline for the next wait and returns the one in
// force. It is never later than the moment the awaited reply is overdue:
// the last reply plus the read timeout while the reader holds commands, the
// oldest pending write plus the timeout, or (idle) now plus the timeout,
// which no later write can precede. A deadline met early is harmless: the
// reader checks overdue and arms again.
func (c *streamConn) armDeadline(armed time.Time, holding bool, progress time.Time) time.Time {
	if c.readTimeout <= 0 {
		return armed
	}
	want := progress
	if !holding {
		c.mu.Lock()
		if len(c.pending) > 0 {
			want = c.sentAt
		} else {
			want = time.Now()
		}
		c.mu.Unlock()
	}
	want = want.Add(c.readTimeout)
	// A deadline kept for being close to the one wanted, but already past,
	// would fail every wait at once: the reader would spin until the reply
	// is overdue.
	if want.Before(armed) || want.Sub(armed) > c.readTimeout/4 || !time.Now().Before(armed) {
		c.nc.SetReadDeadline(want)
		return want
	}
	return armed
}

// overdue reports, after a read deadline, whether an awaited reply is late by
// the read timeout.
func (c *streamConn) overdue(holding bool, progress time.Time) bool {
	if holding {
		return time.Since(progress) >= c.readTimeout
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil || (len(c.pending) > 0 && time.Since(c.sentAt) >= c.readTimeout)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// complete completes commands the connection had taken on.
func (c *streamConn) complete(done []Completer, err error) {
	completeAll(done, err)
	c.outstanding.Add(-int64(len(done)))
}
