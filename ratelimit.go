package rmq

import (
	"fmt"
	"math"
	"sync"
	"time"
)

// RateLimit bounds how fast a topic is consumed across every process of the
// namespace: PerSecond messages per second on average, with bursts of up to
// Burst. The zero value is unlimited. See the README's Flow control.
type RateLimit struct {
	PerSecond float64 // > 0; 0 with Burst 0: unlimited
	// Burst is ≥ 1 when PerSecond is set. Each process's bucket holds its
	// share of it but at least one message, so with fewer than one message
	// of Burst per consuming process the processes together may burst one
	// message each.
	Burst int
}

// Validate reports why l is not a valid limit, with ErrInvalidRateLimit: a
// negative or non-finite rate, a burst below 1 with a rate, or a burst
// without a rate. The zero value (unlimited) is valid. SetRateLimit calls
// it; call it to check a limit read from a flag or a file before use.
func (l RateLimit) Validate() error {
	switch {
	case l == RateLimit{}:
		return nil
	case l.PerSecond < 0 || math.IsNaN(l.PerSecond) || math.IsInf(l.PerSecond, 0):
		return fmt.Errorf("%w: rate %v per second", ErrInvalidRateLimit, l.PerSecond)
	case l.PerSecond == 0:
		return fmt.Errorf("%w: a burst of %d without a rate", ErrInvalidRateLimit, l.Burst)
	case l.Burst < 1:
		return fmt.Errorf("%w: burst %d is below 1 (with a rate of %v per second)", ErrInvalidRateLimit, l.Burst, l.PerSecond)
	}
	return nil
}

// String returns "unlimited" or "RATE/s, burst BURST".
func (l RateLimit) String() string {
	if l == (RateLimit{}) {
		return "unlimited"
	}
	return fmt.Sprintf("%g/s, burst %d", l.PerSecond, l.Burst)
}

// rateLimiter is this process's share of a topic's rate limit: a token
// bucket that the topic's threads draw from before each pop. The share is the
// limit times the fraction of the topic's slots this process owns at the
// moment of the draw, so that the processes of a namespace together deliver
// the limit while the backlog is spread over the slots, and the share follows
// the slots as they move.
type rateLimiter struct {
	mu     sync.Mutex
	limit  RateLimit // of the whole namespace; zero: unlimited
	tokens float64
	last   time.Time
}

// set changes the namespace-wide limit.
func (l *rateLimiter) set(limit RateLimit) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limit == (RateLimit{}) && limit != (RateLimit{}) {
		l.tokens, l.last = 0, time.Time{} // filled to the share's burst at the first draw
	}
	l.limit = limit
}

// take takes up to want tokens, share being the fraction of the slots this
// process owns; with none, it says when one will be there.
func (l *rateLimiter) take(want int, share float64, now time.Time) (int, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.limit.PerSecond <= 0 {
		return want, time.Time{}
	}
	rate, burst := l.limit.PerSecond*share, max(1, float64(l.limit.Burst)*share)
	if rate <= 0 {
		return 0, now.Add(controlRefresh)
	}
	if l.last.IsZero() {
		l.tokens = burst
	} else {
		l.tokens = min(burst, l.tokens+now.Sub(l.last).Seconds()*rate)
	}
	l.last = now
	n := want
	if l.tokens < float64(want) {
		n = int(l.tokens) // not int(l.tokens) beside want: a huge burst's tokens overflow an int
	}
	if n < 1 {
		// Look again when a token is there, or after controlRefresh if that
		// is later (a tiny rate's wait in ns would overflow a Duration): the
		// tokens are counted from the elapsed time at the next look anyway.
		wait := controlRefresh
		if secs := (1 - l.tokens) / rate; secs < controlRefresh.Seconds() {
			wait = max(time.Duration(secs*float64(time.Second)), time.Millisecond)
		}
		return 0, now.Add(wait)
	}
	l.tokens -= float64(n)
	return n, time.Time{}
}

// limited reports whether a rate limit is set.
func (l *rateLimiter) limited() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit.PerSecond > 0
}

// giveBack returns tokens taken but not used (fewer messages were due).
func (l *rateLimiter) giveBack(n int) {
	if n <= 0 {
		return
	}
	l.mu.Lock()
	if l.limit.PerSecond > 0 {
		l.tokens += float64(n)
	}
	l.mu.Unlock()
}
