package rmq

import (
	"time"

	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/rdb"
)

// MaxRetries is how many times a failed message is retried before it goes to
// the dead set: a message is delivered at most MaxRetries+1 times.
const MaxRetries = rdb.MaxRetries

// BackoffFunc returns how long a failed message waits before retry n
// (1..MaxRetries). Zero or less retries at once. New calls it once for each
// n and keeps the waits (Redis applies them when a message fails), so a
// random jitter in it is drawn once per client, not per message.
type BackoffFunc func(retry int) time.Duration

// ExponentialBackoff waits base before retry 1 and doubles the wait for each
// further retry, up to max.
func ExponentialBackoff(base, max time.Duration) BackoffFunc {
	return backoff.Exponential{Base: base, Max: max}.Delay
}

// SteppedBackoff waits steps[n-1] before retry n; retries past the last step
// wait the last step. SteppedBackoff(15*time.Second, 3*time.Minute,
// 10*time.Minute, 30*time.Minute) gives the classic stepped schedule.
func SteppedBackoff(steps ...time.Duration) BackoffFunc {
	return func(retry int) time.Duration {
		if len(steps) == 0 {
			return 0
		}
		return steps[min(max(retry, 1), len(steps))-1]
	}
}

// NoBackoff retries at once, as the original design did.
func NoBackoff(int) time.Duration { return 0 }

// DefaultBackoff is ExponentialBackoff(500ms, 1m): 0.5s, 1s, 2s, … then one
// minute per retry, about ten minutes from first failure to the dead set.
var DefaultBackoff = ExponentialBackoff(500*time.Millisecond, time.Minute)
