// Package backoff is the one schedule of pauses RMQ uses between attempts:
// retries of failed messages (rmq.ExponentialBackoff), consumers and
// coordinators backing off from an unreachable Redis or ZooKeeper, and sends
// going again on a fresh connection.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Exponential waits Base before attempt 1 and doubles the wait for each
// further attempt, up to Max. With Jitter, each wait is drawn from its upper
// half, so that callers failing together do not come back in step.
type Exponential struct {
	Base, Max time.Duration
	Jitter    bool
}

// Delay returns the wait before attempt n (1-based; n < 1 counts as 1).
// A Base of zero or less waits nothing.
func (e Exponential) Delay(n int) time.Duration {
	if e.Base <= 0 {
		return 0
	}
	limit := max(e.Max, e.Base)
	d := e.Base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	if e.Jitter {
		d = d/2 + rand.N(d/2+1)
	}
	return d
}

// Redis is the pause of a consumer or coordinator after n consecutive
// failed calls to Redis or ZooKeeper: 50ms doubling to 5s, jittered.
var Redis = Exponential{Base: 50 * time.Millisecond, Max: 5 * time.Second, Jitter: true}

// SlotMove is the pause of a call refused while its Cluster hash slot moves
// between masters (TRYAGAIN, a redirection past the client's), after n
// refusals in a row: 10ms doubling to 1s, jittered. Both masters are well,
// so the first pauses are short; a slot holding many messages takes a while.
var SlotMove = Exponential{Base: 10 * time.Millisecond, Max: time.Second, Jitter: true}
