package coordinator

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// ErrLeaseLost is the cause of a lease's context when ownership was lost
// rather than handed back (session loss, fencing, expiry).
var ErrLeaseLost = errors.New("rmq: slot lease lost")

// clockBase anchors monotonic deadlines: time.Since reads the monotonic clock.
var clockBase = time.Now()

func monoNow() int64 { return int64(time.Since(clockBase)) }

// Lease is one slot of one topic given to one thread of this process.
//
// Valid reports ownership synchronously from a deadline on the monotonic
// clock, so a process that was frozen past its deadline sees the loss the
// moment it runs again, before any goroutine has had time to cancel anything.
type Lease struct {
	topic  string
	slot   int
	thread int
	token  int64
	record string // the owner record a Redis coordinator's claim wrote, if any

	ctx    context.Context
	cancel context.CancelCauseFunc

	deadline atomic.Int64 // monotonic ns; math.MaxInt64 = none
	lost     atomic.Bool

	revokeOnce  sync.Once
	revoking    chan struct{}
	releaseOnce sync.Once
	released    chan struct{}
}

// NewLease returns a lease for coordinator implementations. token is the
// fencing token Redis checks on every pop of the slot (0 = unfenced); tokens
// of successive owners of one slot must increase. The lease has no deadline
// until SetDeadline.
func NewLease(topic string, slot, thread int, token int64) *Lease {
	ctx, cancel := context.WithCancelCause(context.Background())
	l := &Lease{
		topic: topic, slot: slot, thread: thread, token: token,
		ctx: ctx, cancel: cancel,
		revoking: make(chan struct{}),
		released: make(chan struct{}),
	}
	l.deadline.Store(math.MaxInt64)
	return l
}

// Topic returns the topic of the slot.
func (l *Lease) Topic() string { return l.topic }

// Slot returns the slot index.
func (l *Lease) Slot() int { return l.slot }

// Thread returns the index of the thread of this process that owns the slot.
func (l *Lease) Thread() int { return l.thread }

// Token returns the fencing token.
func (l *Lease) Token() int64 { return l.token }

// Record returns the slot's owner record as the claim that granted the lease
// wrote it ("<token>:<worker>"), or "" when the coordinator fences by token
// alone: then Redis learns the token from the first pop.
func (l *Lease) Record() string { return l.record }

// Context is cancelled, with cause ErrLeaseLost, when the lease is lost.
func (l *Lease) Context() context.Context { return l.ctx }

// Revoking is closed when the coordinator wants the slot back (or it was lost).
func (l *Lease) Revoking() <-chan struct{} { return l.revoking }

// Released is closed once the holder has released the slot.
func (l *Lease) Released() <-chan struct{} { return l.released }

// Valid reports whether this process still owns the slot: not lost, not
// released, and the monotonic clock is before the deadline.
func (l *Lease) Valid() bool {
	return !l.lost.Load() && monoNow() < l.deadline.Load()
}

// Release tells the coordinator the holder has stopped: no pop will follow
// and every delivered message is settled. Ownership ends with it.
func (l *Lease) Release() {
	l.releaseOnce.Do(func() {
		l.lost.Store(true)
		l.revoke()
		l.cancel(context.Canceled)
		close(l.released)
	})
}

// Revoke asks the holder to release the slot (for coordinator implementations;
// the holder learns it through Handler.Revoked and Revoking).
func (l *Lease) Revoke() { l.revoke() }

func (l *Lease) revoke() { l.revokeOnce.Do(func() { close(l.revoking) }) }

// Lose ends ownership at once: Valid turns false, the context is cancelled
// and the lease is revoked. The holder still calls Release when it stops.
func (l *Lease) Lose() {
	l.lost.Store(true)
	l.cancel(ErrLeaseLost)
	l.revoke()
}

// SetDeadline sets when ownership ends unless extended: d from now, on the
// monotonic clock.
func (l *Lease) SetDeadline(d time.Duration) {
	l.deadline.Store(monoNow() + int64(d))
}

// Remaining returns the time left before the deadline (negative once past);
// math.MaxInt64 nanoseconds when the lease has no deadline.
func (l *Lease) Remaining() time.Duration {
	d := l.deadline.Load()
	if d == math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d - monoNow())
}
