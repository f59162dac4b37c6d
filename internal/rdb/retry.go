package rdb

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/rmq-go/rmq/internal/backoff"
)

// Retryable reports whether a command that failed with err may be sent again
// on a fresh connection, as go-redis would: the connection broke, could not
// be made, or timed out, or the server refused for the moment (loading,
// read-only replica, master down, too many clients). Error replies that judge
// the command itself (WRONGTYPE, OOM, a wrong password), a closed Stream and
// an ended context are final.
func Retryable(err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrStreamClosed):
		return false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
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

// retryableReplies are the prefixes of error replies that say "not now".
var retryableReplies = []string{"LOADING ", "READONLY ", "MASTERDOWN ", "CLUSTERDOWN ", "TRYAGAIN ",
	"NOREPLICAS ", "ERR max number of clients reached"}

// MaxRetries is how often a command failed with a Retryable error is sent
// again: the go-redis client's MaxRetries (3 unless set; none if set to -1).
func (s *Stream) MaxRetries() int { return s.opt.MaxRetries }

// RetryBackoff is the pause before retry n (0-based): the go-redis client's
// MinRetryBackoff doubled per retry, up to MaxRetryBackoff, with jitter in its
// upper half so that retrying senders do not come back in step.
func (s *Stream) RetryBackoff(n int) time.Duration {
	return backoff.Exponential{Base: s.opt.MinRetryBackoff, Max: s.opt.MaxRetryBackoff, Jitter: true}.Delay(n + 1)
}
