// Package wait holds the two small waiting helpers the consumer and the
// coordinator share.
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
