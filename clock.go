package rmq

import (
	"sync/atomic"
	"time"
)

// redisClock is how far the Redis server's clock runs ahead of this
// process's, as the consumers' cycles read it: due-ness is judged by the
// Redis clock (TIME in the scripts), while a wake-up's due time, a Unix ms
// of that clock, sets a local timer (thread.absorb). A skew of a millisecond
// or less counts as none.
type redisClock struct {
	ahead atomic.Int64 // µs; negative: behind
}

// clockSkewMin is the smallest skew the timers account for: within it, a
// look at a due time by the local clock finds the message due, or looks
// again by the Redis clock's delta (linger.go), a millisecond later at most.
const clockSkewMin = time.Millisecond

// note takes the Redis clock, nowUs, read by a call sent at sent whose
// reply came at recv: the skew lies between nowUs − recv and nowUs − sent.
// It keeps the bound nearer zero, or none when the two clocks may agree
// (within clockSkewMin): ahead, a timer set by it is never early by the
// Redis clock and late at most by the reply's way back; behind, a look it
// makes early finds nothing due and looks again by the Redis clock's delta.
func (r *redisClock) note(nowUs int64, sent, recv time.Time) {
	if nowUs <= 0 {
		return
	}
	low, high := nowUs-recv.UnixMicro(), nowUs-sent.UnixMicro()
	tolerance := clockSkewMin.Microseconds()
	skew := int64(0)
	switch {
	case low > tolerance:
		skew = low
	case high < -tolerance:
		skew = high
	}
	r.ahead.Store(skew)
}

// local returns when the Redis clock reads ms, by this process's clock.
func (r *redisClock) local(ms int64) time.Time {
	return time.UnixMilli(ms).Add(-time.Duration(r.ahead.Load()) * time.Microsecond)
}

// now returns the Redis clock's time now, as far as this process knows it.
func (r *redisClock) now() time.Time {
	return time.Now().Add(time.Duration(r.ahead.Load()) * time.Microsecond)
}
