package rdb

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
)

func TestRetryable(t *testing.T) {
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: context.DeadlineExceeded}
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{io.EOF, true},
		{fmt.Errorf("rdb: read from redis: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("rdb: write to redis: %w", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}), true},
		{fmt.Errorf("rdb: read from redis: %w", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}), true},
		{fmt.Errorf("rdb: dial x: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), true},
		{fmt.Errorf("rdb: dial x: %w", dialTimeout), true},
		{ReplyError("LOADING Redis is loading the dataset in memory"), true},
		{fmt.Errorf("rdb: redis refuses writes: %w", ReplyError("READONLY You can't write against a read only replica.")), true},
		{ReplyError("MASTERDOWN Link with MASTER is down"), true},
		{ReplyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{ReplyError("ERR max number of clients reached"), true},
		{ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{ReplyError("OOM command not allowed when used memory > 'maxmemory'."), false},
		{fmt.Errorf("rdb: connect to x: AUTH: %w", ReplyError("WRONGPASS invalid username-password pair")), false},
		{fmt.Errorf("%w: a reply to no command", errProtocol), false},
		{ErrClosed, false},
		{context.Canceled, false},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, retryable(c.err), "%v", c.err)
	}
}

// The send stream retries as the go-redis client retries its own commands;
// pipelines leave retries to the go-redis client.
func TestRetryBackoffFollowsTheClientOptions(t *testing.T) {
	var opt *redis.Options // the client's options, defaults filled in
	policy := func(o *redis.Options) retryPolicy {
		o.Addr = "127.0.0.1:1"
		c := redis.NewClient(o)
		t.Cleanup(func() { c.Close() })
		opt = c.Options()
		return newSendStream(c, ReplicaAck{}, &wakeOutcome{log: discard}).retries
	}
	p := policy(&redis.Options{})
	assert.Equal(t, 3, p.max, "go-redis default")
	lo, hi := opt.MinRetryBackoff, opt.MaxRetryBackoff
	for n := range 10 {
		d := p.delay(n)
		want := min(lo<<n, hi)
		assert.GreaterOrEqual(t, d, want/2, "retry %d", n)
		assert.LessOrEqual(t, d, want, "retry %d", n)
	}

	p = policy(&redis.Options{MaxRetries: -1, MinRetryBackoff: -1})
	assert.Equal(t, 0, p.max, "MaxRetries -1 disables retries")
	assert.Zero(t, p.delay(0), "MinRetryBackoff -1 means no pause")

	p = policy(&redis.Options{MaxRetries: 5, MinRetryBackoff: time.Second, MaxRetryBackoff: 2 * time.Second})
	assert.Equal(t, 5, p.max)
	assert.GreaterOrEqual(t, p.delay(10), time.Second)
	assert.LessOrEqual(t, p.delay(10), 2*time.Second)

	_, again := (&sendPipe{}).retryAfter(io.EOF, 0)
	assert.False(t, again, "go-redis retries its pipelines itself")
	p = policy(&redis.Options{MaxRetries: 2, MinRetryBackoff: -1})
	for attempt, want := range []bool{true, true, false} {
		_, again = p.after(io.EOF, attempt)
		assert.Equal(t, want, again, "attempt %d", attempt)
	}
	_, again = p.after(ReplyError("WRONGTYPE x"), 0)
	assert.False(t, again, "a final error")
}
