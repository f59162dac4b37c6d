package rmq

import (
	"context"

	"github.com/rmq-go/rmq/coordinator"
)

// leaseKey is the context key of the slot lease of a listener call.
type leaseKey struct{}

// Owned reports whether this worker still owns the slot of the message whose
// listener received ctx. It reads a lease deadline on the monotonic clock, so
// it turns false as soon as the worker may have lost the slot, even right
// after the process thaws from a freeze and before any goroutine has run.
// Check it before an irreversible side effect:
//
//	if !rmq.Owned(ctx) {
//		return rmq.ErrNotOwner
//	}
//
// Guarantee: no two listener calls of one slot that both saw Owned(ctx) ==
// true at their end overlap in time. Outside a listener it returns false.
func Owned(ctx context.Context) bool {
	l, ok := ctx.Value(leaseKey{}).(*coordinator.Lease)
	return ok && l.Valid()
}
