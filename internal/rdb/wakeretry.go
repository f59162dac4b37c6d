package rdb

import (
	"context"
	"sync"
	"time"
)

// Failed wake-ups, published again. A wake-up whose publication failed after
// its entries were stored leaves them to the consumers' idle sweep, which on
// a Cluster runs once a minute by default. So the broker publishes that
// topic's wake-up again, for the slots it named with their due times (every
// slot, WakeAll, where that is not known: retrywakes.go), on the topic's
// broadcast channel (Publication.Channel), which consumers follow on every
// kind of Redis (through two masters on a Cluster), wakeRetryAfter after the
// failure (at once after a MOVED: the slot moved, see wakeOutcome.failedOn)
// and then with a doubling delay while that fails too, until it goes
// through or the broker closes. Failures of one topic meanwhile go as one
// publication. What is left to the sweep is a producer that dies between
// storing entries and publishing their wake-up.

// WakeAll is the wake-up payload that names every slot of the topic.
const WakeAll = "*"

const (
	wakeRetryAfter = 100 * time.Millisecond
	wakeRetryMax   = 5 * time.Second
	wakeRetryWait  = 5 * time.Second // the most one publication may take
)

// wakeRetry publishes failed topics' wake-ups again (see above).
type wakeRetry struct {
	publish func(ctx context.Context, channel string, payload []byte) error
	failed  func(err error) // logs a failure (wakeOutcome.Complete)

	mu      sync.Mutex
	pending map[string]*retryWakes // by the topic's broadcast channel
	armed   bool                   // a run is scheduled or running
	soon    bool                   // the run after the one running comes at once (addNow)
	timer   *time.Timer            // the scheduled run's, until it starts
	delay   time.Duration          // before the next run
	closed  bool
	ctx     context.Context // ends at close
	cancel  context.CancelFunc
	runs    sync.WaitGroup
}

func newWakeRetry(publish func(ctx context.Context, channel string, payload []byte) error, failed func(error)) *wakeRetry {
	ctx, cancel := context.WithCancel(context.Background())
	return &wakeRetry{publish: publish, failed: failed, pending: make(map[string]*retryWakes),
		delay: wakeRetryAfter, ctx: ctx, cancel: cancel}
}

// add schedules the wake-ups of payload (as published; nil: every slot) for
// publication on channel, a topic's broadcast channel, after the current
// delay.
func (r *wakeRetry) add(channel string, payload []byte) { r.schedule(channel, payload, false) }

// addNow schedules the wake-ups of payload for publication on channel at
// once, bringing a scheduled run forward, or, while a run is under way,
// having the next follow it at once: the failure was a slot's move, not a
// node in trouble, so waiting gains nothing.
func (r *wakeRetry) addNow(channel string, payload []byte) { r.schedule(channel, payload, true) }

// schedule adds payload's wake-ups to the pending ones of channel and arms
// a run: after the delay, or at once if now is set (see add, addNow).
func (r *wakeRetry) schedule(channel string, payload []byte, now bool) {
	if r == nil || channel == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.merge(channel, payload)
	switch {
	case !now:
		r.arm(r.delay)
	case r.timer != nil && r.timer.Stop():
		r.timer = time.AfterFunc(0, r.run) // the stopped run's place in r.runs
	case r.armed && r.timer == nil:
		r.soon = true // a run is under way: the next follows it at once
	default:
		r.arm(0)
	}
}

// arm schedules a run after delay unless one is scheduled or running; r.mu
// is held.
func (r *wakeRetry) arm(delay time.Duration) {
	if r.armed || r.closed || len(r.pending) == 0 {
		return
	}
	r.armed = true
	r.runs.Add(1)
	r.timer = time.AfterFunc(delay, r.run)
}

// merge adds payload's wake-ups to those pending on channel; r.mu is held.
func (r *wakeRetry) merge(channel string, payload []byte) {
	w := r.pending[channel]
	if w == nil {
		w = new(retryWakes)
		r.pending[channel] = w
	}
	w.merge(payload)
}

// run publishes every pending channel's wake-ups once.
func (r *wakeRetry) run() {
	defer r.runs.Done()
	type publication struct {
		channel string
		payload []byte
	}
	r.mu.Lock()
	r.timer = nil
	pubs := make([]publication, 0, len(r.pending))
	for ch, w := range r.pending {
		pubs = append(pubs, publication{ch, w.payload()})
	}
	clear(r.pending)
	r.mu.Unlock()
	var failed []publication
	var firstErr error
	for _, p := range pubs {
		ctx, cancel := context.WithTimeout(r.ctx, wakeRetryWait)
		err := r.publish(ctx, p.channel, p.payload)
		cancel()
		if err != nil {
			failed = append(failed, p)
			if firstErr == nil {
				firstErr = err
			}
		}
	}
	if firstErr != nil && r.ctx.Err() == nil {
		r.failed(firstErr)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = false
	if len(failed) == 0 {
		r.delay = wakeRetryAfter
	} else {
		for _, p := range failed {
			r.merge(p.channel, p.payload)
		}
		r.delay = min(2*r.delay, wakeRetryMax)
	}
	delay := r.delay
	if r.soon {
		delay, r.soon = 0, false
	}
	r.arm(delay)
}

// close drops what is pending and a scheduled run, and waits for a run in
// progress, whose publications it cancels.
func (r *wakeRetry) close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.closed = true
	clear(r.pending)
	if r.timer != nil && r.timer.Stop() {
		r.runs.Done()
	}
	r.timer = nil
	r.mu.Unlock()
	r.cancel()
	r.runs.Wait()
}
