// Package wait holds the small waiting helpers the consumer, the producer,
// the coordinator and the Redis layer share.
package wait

import (
	"context"
	"time"
)

// Closed reports whether ch is closed, without blocking.
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Sleep waits d or until ctx ends, whichever comes first.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Or returns what done yields, or false if stop closes first: the caller
// leaves the call behind done running. A result ready when stop closes
// still wins.
func Or[T any](done <-chan T, stop <-chan struct{}) (T, bool) {
	select {
	case v := <-done:
		return v, true
	case <-stop:
	}
	select {
	case v := <-done:
		return v, true
	default:
		var zero T
		return zero, false
	}
}
