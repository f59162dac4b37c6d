package rmq

import (
	"sync/atomic"
	"time"
)

// redisClock is how far the Redis server's clock runs ahead of this
// process's, as the presence calls read it (the namespace's master): due-ness
// is judged by the Redis clock (TIME in the scripts), while a wake-up's due
// time, a Unix ms of that clock, sets a local timer (thread.absorb). Each
// slot keeps the skew of its own master as its pops read it (slotState.skew;
// a Cluster's masters may disagree), this one stands for a slot not popped
// yet. A skew of a millisecond or less counts as none.
type redisClock struct {
	ahead atomic.Int64 // µs; negative: behind
}

// clockSkewMin is the smallest skew the timers account for: within it, a
// look at a due time by the local clock finds the message due, or looks
// again by the Redis clock's delta (linger.go), a millisecond later at most.
const clockSkewMin = time.Millisecond

// note takes the Redis clock, nowUs, read by a call sent at sent whose
// reply came at recv (clockSkew).
func (r *redisClock) note(nowUs int64, sent, recv time.Time) {
	if skew, ok := clockSkew(nowUs, sent, recv); ok {
		r.ahead.Store(skew)
	}
}

// clockSkew returns how far the Redis clock runs ahead of this process's in
// µs, from its reading nowUs by a call sent at sent whose reply came at
// recv, or false for no reading (nowUs 0). The skew lies between nowUs −
// recv and nowUs − sent: it is the bound nearer zero, or none when the two
// clocks may agree (within clockSkewMin). Ahead, a timer set by it is never
// early by the Redis clock and late at most by the reply's way back;
// behind, a look it makes early finds nothing due and looks again by the
// Redis clock's delta.
func clockSkew(nowUs int64, sent, recv time.Time) (int64, bool) {
	if nowUs <= 0 {
		return 0, false
	}
	low, high := nowUs-recv.UnixMicro(), nowUs-sent.UnixMicro()
	tolerance := clockSkewMin.Microseconds()
	switch {
	case low > tolerance:
		return low, true
	case high < -tolerance:
		return high, true
	}
	return 0, true
}

// local returns when the Redis clock reads ms, by this process's clock.
func (r *redisClock) local(ms int64) time.Time {
	return localTime(ms, r.ahead.Load())
}

// localTime returns when a clock skew µs ahead of this process's reads ms.
func localTime(ms, skew int64) time.Time {
	return time.UnixMilli(ms).Add(-time.Duration(skew) * time.Microsecond)
}

// now returns the Redis clock's time now, as far as this process knows it.
func (r *redisClock) now() time.Time {
	return time.Now().Add(time.Duration(r.ahead.Load()) * time.Microsecond)
}
