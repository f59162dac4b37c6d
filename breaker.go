package rmq

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Breaker is a subscription's adaptive protection: when the share of its
// listener calls that fail, over the last breakerWindow, reaches
// FailureRatio (with at least MinCalls calls in the window, and failures of
// at least half as many distinct messages, so that a few poison messages
// failing again and again reach the dead set as before), this process
// stops consuming the topic (open) for OpenFor; then it lets one message at
// a time through (half-open), and after breakerProbes successes in a row
// consumes as before (closed), while a failure opens it again. Messages held
// back by an open breaker stay where they are and spend no retries; popped
// messages not yet started when it opens go back unchanged. The zero Breaker
// disables it; the default is DefaultBreaker.
type Breaker struct {
	// FailureRatio is the share of failed calls that opens the breaker, in (0, 1].
	FailureRatio float64
	// MinCalls is how many calls the window needs before it may open, ≥ 1.
	MinCalls int
	// OpenFor is how long it stays open before probing, > 0.
	OpenFor time.Duration
}

// DefaultBreaker opens when half the calls of the last 10 s failed, after at
// least 20 calls, for 5 s.
var DefaultBreaker = Breaker{FailureRatio: 0.5, MinCalls: 20, OpenFor: 5 * time.Second}

// Breaker timing that is not configurable.
const (
	breakerWindow  = 10 * time.Second // failures are counted over this much recent time
	breakerBuckets = 10               // of breakerWindow/breakerBuckets each
	breakerProbes  = 3                // successes in a row that close a half-open breaker
)

// WithBreaker sets the subscription's breaker; Breaker{} disables it.
// Default DefaultBreaker.
func WithBreaker(b Breaker) SubscribeOption {
	return func(c *subConfig) {
		if b == (Breaker{}) {
			c.breaker = nil
			return
		}
		if !(b.FailureRatio > 0 && b.FailureRatio <= 1) || b.MinCalls < 1 || b.OpenFor <= 0 {
			c.errs = append(c.errs, fmt.Errorf("%w: breaker %+v: FailureRatio must be in (0, 1], MinCalls ≥ 1, OpenFor > 0",
				ErrInvalidOption, b))
			return
		}
		c.breaker = &b
	}
}

// Breaker states, as TopicMetrics reports them.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
	BreakerOff      = "off"
)

// breaker is one subscription's Breaker at work.
type breaker struct {
	cfg   Breaker
	topic string
	log   *slog.Logger

	mu        sync.Mutex
	state     string
	openUntil time.Time
	probing   bool      // a half-open probe is in flight
	probeEnds time.Time // when a probe in flight counts as ended even without an outcome
	probeFor  time.Duration
	successes int // probes that succeeded in a row
	buckets   [breakerBuckets]breakerBucket
	failing   map[uint64]time.Time // distinct failed messages of the window, at most need
	need      int                  // distinct failed messages that may open it
	pruned    time.Time            // when failing last dropped what left the window

	// Moves into each state: opened (from closed, or from half-open when a
	// probe fails), halfOpened (the first look after OpenFor), closed (the
	// probes succeeded).
	opened, halfOpened, closed atomic.Int64
	shown                      atomic.Value // state, for metrics without the lock
}

// breakerBucket counts the calls of one tenth of the window: the epoch-th
// span of breakerWindow/breakerBuckets since the Unix epoch.
type breakerBucket struct {
	epoch           int64
	calls, failures int
}

func newBreaker(cfg Breaker, topic string, log *slog.Logger, probeFor time.Duration) *breaker {
	b := &breaker{cfg: cfg, topic: topic, log: log, state: BreakerClosed, probeFor: probeFor,
		failing: make(map[uint64]time.Time), need: max(1, (cfg.MinCalls+1)/2)}
	b.shown.Store(BreakerClosed)
	return b
}

// allow reports whether a pop may go ahead now, and whether it is a probe
// (at most one message, its outcome reported with probeDone or record);
// otherwise until when to hold back.
func (b *breaker) allow(now time.Time) (ok, probe bool, until time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case BreakerOpen:
		if now.Before(b.openUntil) {
			return false, false, b.openUntil
		}
		b.set(BreakerHalfOpen, "probing with one message at a time")
		b.successes = 0
		fallthrough
	case BreakerHalfOpen:
		if b.probing && now.Before(b.probeEnds) {
			return false, false, now.Add(breakerProbeWait)
		}
		b.probing, b.probeEnds = true, now.Add(b.probeFor)
		return true, true, time.Time{}
	}
	return true, false, time.Time{}
}

// breakerProbeWait is how often a half-open breaker's other slots look again.
const breakerProbeWait = 50 * time.Millisecond

// probeDone ends a probe without an outcome: it delivered nothing, or its
// message went back unstarted or was given back (ErrNotOwner). In case a
// path misses that, a probe also counts as ended probeFor after it began
// (the consume timeout and a second), so that a half-open breaker never
// holds its topic back for good.
func (b *breaker) probeDone() {
	b.mu.Lock()
	b.probing = false
	b.mu.Unlock()
}

// record counts one listener call's outcome; id tells messages apart.
func (b *breaker) record(now time.Time, failed bool, id uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerHalfOpen {
		b.probing = false
		if failed {
			b.trip(now, "a probe failed")
			return
		}
		if b.successes++; b.successes >= breakerProbes {
			b.set(BreakerClosed, "probes succeeded")
			b.buckets = [breakerBuckets]breakerBucket{}
			clear(b.failing)
		}
		return
	}
	if b.state != BreakerClosed {
		return
	}
	epoch := now.UnixNano() / int64(breakerWindow/breakerBuckets)
	bk := &b.buckets[epoch%breakerBuckets]
	if bk.epoch != epoch {
		bk.epoch, bk.calls, bk.failures = epoch, 0, 0
	}
	bk.calls++
	if !failed {
		return // only a failure can open it
	}
	bk.failures++
	b.noteFailing(now, id)
	calls, failures := 0, 0
	for _, x := range b.buckets {
		if epoch-x.epoch < breakerBuckets {
			calls += x.calls
			failures += x.failures
		}
	}
	if calls >= b.cfg.MinCalls && float64(failures) >= b.cfg.FailureRatio*float64(calls) && b.distinctFailing(now) >= b.need {
		b.trip(now, fmt.Sprintf("%d of the last %d calls failed", failures, calls))
	}
}

// noteFailing remembers a failed message (under mu). The set never holds more
// than need messages: once full of ones within the window, the
// distinct-message condition is met.
func (b *breaker) noteFailing(now time.Time, id uint64) {
	if _, ok := b.failing[id]; ok || len(b.failing) < b.need {
		b.failing[id] = now
		return
	}
	b.prune(now)
	if len(b.failing) < b.need {
		b.failing[id] = now
	}
}

// distinctFailing returns how many distinct messages failed within the
// window (under mu): the set without what left it, dropped at most a bucket
// ago (prune).
func (b *breaker) distinctFailing(now time.Time) int {
	b.prune(now)
	return len(b.failing)
}

// prune drops the failed messages that left the window (under mu), at most
// once a bucket: the set may hold up to need of them.
func (b *breaker) prune(now time.Time) {
	if now.Sub(b.pruned) < breakerWindow/breakerBuckets {
		return
	}
	b.pruned = now
	for k, at := range b.failing {
		if now.Sub(at) >= breakerWindow {
			delete(b.failing, k)
		}
	}
}

// messageID tells messages apart for the breaker: slot and content.
func messageID(m *Message) uint64 {
	h := fnv.New64a()
	var slot [4]byte
	binary.BigEndian.PutUint32(slot[:], uint32(m.Slot))
	h.Write(slot[:])
	h.Write(m.Content)
	return h.Sum64()
}

// trip opens the breaker (under mu).
func (b *breaker) trip(now time.Time, why string) {
	clear(b.failing)
	b.openUntil = now.Add(b.cfg.OpenFor)
	b.set(BreakerOpen, why)
}

// set changes the state, counts the move and logs it (under mu).
func (b *breaker) set(state, why string) {
	b.log.Warn("rmq: breaker "+state, "topic", b.topic, "why", why, "open_for", b.cfg.OpenFor)
	switch state {
	case BreakerOpen:
		b.opened.Add(1)
	case BreakerHalfOpen:
		b.halfOpened.Add(1)
	case BreakerClosed:
		b.closed.Add(1)
	}
	b.state = state
	b.shown.Store(state)
}

// transitions returns the moves into each state so far, by state.
func (b *breaker) transitions() map[string]int64 {
	return map[string]int64{BreakerOpen: b.opened.Load(), BreakerHalfOpen: b.halfOpened.Load(), BreakerClosed: b.closed.Load()}
}

// isOpen reports whether consumption is held back now (an open breaker).
func (b *breaker) isOpen() bool { return b.shown.Load() == BreakerOpen }

// State returns the state for metrics.
func (b *breaker) State() string { return b.shown.Load().(string) }
