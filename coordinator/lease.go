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

// noDeadline is the deadline of a lease that has none yet.
const noDeadline = math.MaxInt64

// Lease is one slot of one topic given to one thread of this process: the
// holder's side. The holder pops from the slot while the lease is valid and
// not revoked, and calls Release once it has stopped. The coordinator that
// issued the lease controls it through its Grant.
//
// Valid reports ownership synchronously from a deadline on the monotonic
// clock, so a process that was frozen past its deadline sees the loss the
// moment it runs again, before any goroutine has had time to cancel anything.
//
// A process may hold tens of thousands of leases, most of them idle: the
// context and the two channels are made when first asked for (Context,
// Revoking, Grant.Released), and IsRevoked and Grant.IsReleased answer
// without them.
type Lease struct {
	topic  string
	slot   int
	thread int
	token  int64
	record string // the owner record a Redis coordinator's claim wrote, if any

	deadline atomic.Int64 // monotonic ns since clockBase; noDeadline = none
	lost     atomic.Bool
	revoked  atomic.Bool // set under mu
	released atomic.Bool // set under mu

	mu           sync.Mutex
	ctx          context.Context // nil until Context is called
	cancel       context.CancelCauseFunc
	cause        error         // why the lease ended, once it did: ErrLeaseLost or context.Canceled
	revoking     chan struct{} // nil until Revoking is called
	releasedCh   chan struct{} // nil until Grant.Released is called
	afterRelease []func()      // each run in its own goroutine once released
}

// closedChan is the channel handed out for an event that already happened.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// NewLease returns a lease for coordinator implementations: the Lease goes to
// the holder (through Handler.Assigned), the Grant stays with the coordinator.
// token is the fencing token Redis checks on every pop of the slot (0 =
// unfenced); tokens of successive owners of one slot must increase. The lease
// has no deadline until the grant sets one.
func NewLease(topic string, slot, thread int, token int64) (*Lease, *Grant) {
	l := &Lease{topic: topic, slot: slot, thread: thread, token: token}
	l.deadline.Store(noDeadline)
	return l, &Grant{l: l}
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

// Context is cancelled, with cause ErrLeaseLost, when the lease is lost, and
// with context.Canceled when it is released.
func (l *Lease) Context() context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancelCause(context.Background())
		if l.cause != nil {
			l.cancel(l.cause)
		}
	}
	return l.ctx
}

// Revoking is closed when the coordinator wants the slot back (or it was lost).
func (l *Lease) Revoking() <-chan struct{} { return l.signal(&l.revoked, &l.revoking) }

// signal returns the channel *ch of the event that sets happened, made on
// first use: closedChan once the event came. The event's side sets happened
// and closes *ch, if made, under l.mu.
func (l *Lease) signal(happened *atomic.Bool, ch *chan struct{}) <-chan struct{} {
	if happened.Load() {
		return closedChan
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if happened.Load() {
		return closedChan
	}
	if *ch == nil {
		*ch = make(chan struct{})
	}
	return *ch
}

// IsRevoked reports whether Revoking is closed: the coordinator wants the
// slot back, or it was lost.
func (l *Lease) IsRevoked() bool { return l.revoked.Load() }

// Valid reports whether this process still owns the slot: not lost, not
// released, and the monotonic clock is before the deadline.
func (l *Lease) Valid() bool {
	return !l.lost.Load() && monoNow() < l.deadline.Load()
}

// Remaining returns the time left before the deadline (negative once past);
// math.MaxInt64 nanoseconds when the lease has no deadline.
func (l *Lease) Remaining() time.Duration {
	d := l.deadline.Load()
	if d == noDeadline {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(d - monoNow())
}

// Release tells the coordinator the holder has stopped: no pop will follow
// and every delivered message is settled. Ownership ends with it. Only the
// first call counts.
func (l *Lease) Release() {
	l.mu.Lock()
	if l.released.Load() {
		l.mu.Unlock()
		return
	}
	l.lost.Store(true)
	l.revokeLocked()
	l.endLocked(context.Canceled)
	l.released.Store(true)
	if l.releasedCh != nil {
		close(l.releasedCh)
	}
	after := l.afterRelease
	l.afterRelease = nil
	l.mu.Unlock()
	for _, f := range after {
		go f()
	}
}

// Fenced tells the lease that Redis refused the holder's fencing token:
// another owner holds the slot. Ownership ends at once, as with Grant.Lose
// (Valid turns false, the context is cancelled with cause ErrLeaseLost, the
// lease is revoked); the holder still calls Release when it has stopped.
func (l *Lease) Fenced() { l.lose() }

func (l *Lease) revoke() {
	l.mu.Lock()
	l.revokeLocked()
	l.mu.Unlock()
}

func (l *Lease) lose() {
	l.mu.Lock()
	l.lost.Store(true)
	l.endLocked(ErrLeaseLost)
	l.revokeLocked()
	l.mu.Unlock()
}

// revokeLocked closes Revoking, once; l.mu is held.
func (l *Lease) revokeLocked() {
	if l.revoked.Load() {
		return
	}
	l.revoked.Store(true)
	if l.revoking != nil {
		close(l.revoking)
	}
}

// endLocked cancels the context with cause, unless it ended before (the
// first cause stays); l.mu is held.
func (l *Lease) endLocked(cause error) {
	if l.cause != nil {
		return
	}
	l.cause = cause
	if l.cancel != nil {
		l.cancel(cause)
	}
}

// Grant is the coordinator's side of a Lease: it asks for the slot back,
// takes it away, sets how long ownership lasts, and learns when the holder
// has released it. It is safe for concurrent use.
type Grant struct{ l *Lease }

// Lease returns the holder's side, to hand to Handler.Assigned and
// Handler.Revoked.
func (g *Grant) Lease() *Lease { return g.l }

// Revoke asks the holder to release the slot: Revoking closes. The
// coordinator also calls Handler.Revoked, and waits for Released.
func (g *Grant) Revoke() { g.l.revoke() }

// Lose ends ownership at once: Valid turns false, the context is cancelled
// with cause ErrLeaseLost and the lease is revoked. The holder still calls
// Release when it stops.
func (g *Grant) Lose() { g.l.lose() }

// SetDeadline sets when ownership ends unless set again: d from now, on the
// monotonic clock.
func (g *Grant) SetDeadline(d time.Duration) {
	g.l.deadline.Store(addNs(monoNow(), int64(d)))
}

// addNs returns at+d, at most noDeadline: a deadline centuries away must not
// wrap around into the past.
func addNs(at, d int64) int64 {
	if d > 0 && at > noDeadline-d {
		return noDeadline
	}
	return at + d
}

// SetDeadlineAt sets when ownership ends unless set again: at t, on the
// monotonic clock. t should come from time.Now (with Add), which carries a
// monotonic reading; a t without one (parsed, or stripped by Round(0)) is
// placed on the monotonic clock by its wall-clock distance from now.
func (g *Grant) SetDeadlineAt(t time.Time) {
	now := time.Now()
	g.l.deadline.Store(addNs(int64(now.Sub(clockBase)), int64(t.Sub(now))))
}

// Released is closed once the holder has released the slot.
func (g *Grant) Released() <-chan struct{} { return g.l.signal(&g.l.released, &g.l.releasedCh) }

// IsReleased reports whether Released is closed: the holder has released
// the slot.
func (g *Grant) IsReleased() bool { return g.l.released.Load() }

// AfterRelease arranges for f to run in its own goroutine once the holder
// has released the slot (at once if it has), as context.AfterFunc does for a
// context. Unlike a goroutine waiting on Released, it costs no goroutine
// until then: a process holding tens of thousands of slots keeps that many
// fewer stacks.
func (g *Grant) AfterRelease(f func()) {
	l := g.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released.Load() {
		go f()
		return
	}
	l.afterRelease = append(l.afterRelease, f)
}
