package rmq

import (
	"context"
	"sync"
	"time"
)

// batchCtx is the listeners' context of one delivered batch: the slot's
// context with the batch's deadline. It is context.WithDeadline made lazily:
// the timer that ends it at the deadline, and the registration with the
// slot's context, are made only when a listener asks for Done or Value (or
// for Err past the deadline). Most listeners finish without, and a delivery
// under a lookahead is one message, so made eagerly they cost each punctual
// message about a tenth of its client CPU (a profile of the lookahead run).
// Until then Deadline and Err answer from the parent and the deadline, as the
// real one would.
type batchCtx struct {
	parent   context.Context
	deadline time.Time

	mu     sync.Mutex
	inner  context.Context // the real context, once made
	cancel context.CancelFunc
	ended  bool // the batch is over: the context is canceled
}

var _ context.Context = (*batchCtx)(nil)

// newBatchCtx returns parent with the deadline at; end cancels it.
func newBatchCtx(parent context.Context, at time.Time) *batchCtx {
	return &batchCtx{parent: parent, deadline: at}
}

// timed returns the real context, making it on first use.
func (c *batchCtx) timed() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		c.inner, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.ended {
			c.cancel()
		}
	}
	return c.inner
}

// end cancels the context, as the cancel function of WithDeadline does.
func (c *batchCtx) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if c.cancel != nil {
		c.cancel()
	}
}

// Deadline is the batch's deadline, or the parent's if that comes first.
func (c *batchCtx) Deadline() (time.Time, bool) {
	if d, ok := c.parent.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done is the real context's Done.
func (c *batchCtx) Done() <-chan struct{} { return c.timed().Done() }

// Err is the real context's Err; before it is made: the parent's error,
// Canceled once the batch is over, or DeadlineExceeded past the deadline.
func (c *batchCtx) Err() error {
	c.mu.Lock()
	inner, ended := c.inner, c.ended
	c.mu.Unlock()
	switch {
	case inner != nil:
		return inner.Err()
	case c.parent.Err() != nil, ended, !time.Now().Before(c.deadline):
		return c.timed().Err()
	}
	return nil
}

// Value is the real context's Value (context.Cause and the cancellation of
// derived contexts find the real one through it).
func (c *batchCtx) Value(key any) any { return c.timed().Value(key) }

// String names the context as WithDeadline's does.
func (c *batchCtx) String() string {
	return "rmq.batchCtx(" + c.deadline.String() + ")"
}
