package rmqprom

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/rmq-go/rmq"
)

// readMaxAge is how long one read of the namespace (its topics, their flow
// control and backlogs) serves every scrape: a storm of scrapes reads Redis
// at most once per readMaxAge.
const readMaxAge = time.Second

// topicState is what a scrape reads from Redis for one topic.
type topicState struct {
	backlog   rmq.Backlog
	flow      rmq.FlowControl
	flowKnown bool
}

// namespaceRead is one read of the namespace from Redis, shared by every
// scrape that arrives while it runs and, for readMaxAge after it ended, by
// every later one.
type namespaceRead struct {
	deadline time.Time     // the read gives up then (its context's deadline)
	done     chan struct{} // closed when the read has ended

	mu     sync.Mutex
	states []topicState // read so far
	ended  time.Time    // when it ended; zero while it runs
	cut    bool         // it ran out of time before reading every topic
}

// cutShort records that r ran out of time before reading every topic.
func (r *namespaceRead) cutShort() {
	r.mu.Lock()
	r.cut = true
	r.mu.Unlock()
}

// wasCut reports whether r ran out of time before reading every topic.
func (r *namespaceRead) wasCut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut
}

// add appends one topic's state.
func (r *namespaceRead) add(ts topicState) {
	r.mu.Lock()
	r.states = append(r.states, ts)
	r.mu.Unlock()
}

// snapshot returns the states read so far.
func (r *namespaceRead) snapshot() []topicState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]topicState(nil), r.states...)
}

// fresh reports whether r ended less than readMaxAge before now.
func (r *namespaceRead) fresh(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.ended.IsZero() && now.Sub(r.ended) < readMaxAge
}

// running reports whether r has not ended yet.
func (r *namespaceRead) running() bool {
	select {
	case <-r.done:
		return false
	default:
		return true
	}
}

// currentRead returns the read a scrape at now serves from: the last one
// while it runs within its time or ended less than readMaxAge ago, else a
// new one, started here. It returns nil while a read has outlived its
// timeout and still runs (a Redis that does not answer): then the scrape
// leaves the gauges out rather than pile another read on Redis.
func (col *Collector) currentRead(now time.Time) *namespaceRead {
	col.mu.Lock()
	defer col.mu.Unlock()
	if r := col.last; r != nil {
		switch {
		case r.running() && now.Before(r.deadline):
			return r
		case r.running():
			return nil
		case r.fresh(now):
			return r
		}
	}
	r := &namespaceRead{deadline: now.Add(col.timeout), done: make(chan struct{})}
	col.last = r
	go col.read(r)
	return r
}

// read reads the namespace's topics, flow control and backlogs into r, within
// r's deadline. It runs on a goroutine of its own, so a scrape returns in
// time even when the Redis client ignores context deadlines. Failures are
// logged and left out.
func (col *Collector) read(r *namespaceRead) {
	ctx, cancel := context.WithDeadline(context.Background(), r.deadline)
	defer func() {
		cancel()
		r.mu.Lock()
		r.ended = time.Now()
		r.mu.Unlock()
		close(r.done)
	}()
	topics, err := col.c.Topics(ctx)
	switch {
	case errors.Is(err, rmq.ErrUnreadableTopic):
		col.log.Warn("rmqprom: topics whose definitions cannot be read are left out", "err", err)
	case err != nil:
		col.log.Warn("rmqprom: listing topics failed; no backlog gauges in this scrape", "err", err)
		return
	}
	known := make(map[string]bool)
	for _, m := range col.c.TopicMetrics() {
		known[m.Topic] = true
	}
	col.markReadOnly(topics, known)
	flows, ferr := col.c.FlowControls(ctx)
	if ferr != nil && ctx.Err() == nil {
		col.log.Warn("rmqprom: reading flow control failed; no pause or rate limit gauges in this scrape", "err", ferr)
	}
	start := col.resumeAt(topics)
	for i := range topics {
		t := topics[(start+i)%len(topics)]
		b, err := col.c.Backlog(ctx, t.Name)
		if err != nil {
			if ctx.Err() != nil {
				col.stoppedAt(t.Name, i == 0) // the next read starts there (or after it)
				r.cutShort()                  // every scrape it serves logs it
				return
			}
			col.log.Warn("rmqprom: reading a backlog failed; its gauges are left out of this scrape", "topic", t.Name, "err", err)
			continue
		}
		r.add(topicState{backlog: b, flow: flows[t.Name], flowKnown: ferr == nil})
	}
	col.stoppedAt("", false)
}
