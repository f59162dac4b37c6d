package rdb

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/backoff"
)

// retryable reports whether a command that failed with err may be sent again
// on a fresh connection, as go-redis would: the connection broke, could not
// be made, or timed out, or the server refused for the moment (loading,
// read-only replica, master down, too many clients). Error replies that judge
// the command itself (WRONGTYPE, OOM, a wrong password), a closed sender and
// an ended context are final.
func retryable(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrClosed):
		return false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, errDialAside):
		return true
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true // nothing was sent, even if a dial timeout wraps a context error
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re ReplyError
	if errors.As(err, &re) {
		for _, p := range retryableReplies {
			if strings.HasPrefix(string(re), p) {
				return true
			}
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// maxDeadWrites bounds how often one Send goes again, without spending a
// retry, after a write that found its connection already broken.
const maxDeadWrites = 8

// deadWrite reports whether err is a write that found the connection already
// reset or closed by the server (EPIPE, ECONNRESET): what it wrote never
// reached Redis, as with a dead pooled connection, which go-redis discards
// before use without counting a retry. Commands written earlier on the same
// connection fail with it too and may have run; sent again, they store the
// same entries, as every retry may. A write that found its connection
// failed and being dialled again aside (errDialAside) is one too.
func deadWrite(err error) bool {
	if errors.Is(err, errDialAside) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "write" &&
		(errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET))
}

// retryableReplies are the prefixes of error replies that say "not now".
var retryableReplies = []string{"LOADING ", "READONLY ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ",
	"NOREPLICAS ", "ERR max number of clients reached"}

// retryPolicy is how often, and after what pause, the sender writes again
// a Send that failed with a retryable error.
type retryPolicy struct {
	max     int // retries at most; 0 for none
	backoff backoff.Exponential
}

// clientRetries is the policy of a go-redis client's own commands: up to its
// MaxRetries (3 unless set; none if set to -1), pausing MinRetryBackoff
// doubled per retry up to MaxRetryBackoff, with jitter in the upper half so
// that retrying senders do not come back in step.
func clientRetries(opt *redis.Options) retryPolicy {
	return retryPolicy{max: opt.MaxRetries, backoff: backoff.Exponential{Base: opt.MinRetryBackoff, Max: opt.MaxRetryBackoff, Jitter: true}}
}

// clusterRetries is the policy of a Cluster client's commands that fail
// with a sign of a stale slot map: up to its MaxRedirects, pausing as its
// MinRetryBackoff and MaxRetryBackoff say (go-redis's defaults, 8 ms and
// 512 ms, where they are not set).
func clusterRetries(opt *redis.ClusterOptions) retryPolicy {
	b := backoff.Exponential{Base: opt.MinRetryBackoff, Max: opt.MaxRetryBackoff, Jitter: true}
	if b.Base <= 0 {
		b.Base = 8 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 512 * time.Millisecond
	}
	return retryPolicy{max: opt.MaxRedirects, backoff: b}
}

// delay is the pause before retry n (0-based).
func (p retryPolicy) delay(n int) time.Duration { return p.backoff.Delay(n + 1) }

// after reports whether a command failed with err after attempt earlier
// retries goes again (a retryable error, retries left), and after what pause.
func (p retryPolicy) after(err error, attempt int) (time.Duration, bool) {
	if attempt >= p.max || !retryable(err) {
		return 0, false
	}
	return p.delay(attempt), true
}
