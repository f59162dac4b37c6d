package rmq

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/rmq-go/rmq/internal/rdb"
)

// maxPipeline is the most messages stored in one pipeline.
const maxPipeline = 512

// maxFlushers is how many pipelines of coalesced sends may be in flight.
const maxFlushers = 2

// sendReq is one message on its way to Redis.
type sendReq struct {
	topic *topicInfo
	slot  int
	dueMs int64
	entry rdb.Entry
	err   error
	done  chan struct{}
}

// sendQueue coalesces concurrent Sends: a Send appends its request, and a
// flusher goroutine (at most maxFlushers, started on demand, gone when the
// queue is empty) stores everything queued in one pipeline. No timer waits
// for company: while one pipeline is in flight the next one fills up.
type sendQueue struct {
	broker rdb.Broker
	log    *slog.Logger

	mu       sync.Mutex
	pending  []*sendReq
	flushers int

	pipelines, sent atomic.Int64 // pipelines of coalesced sends, and their messages
}

// send queues r and waits until it is stored or ctx ends.
func (q *sendQueue) send(ctx context.Context, r *sendReq) error {
	r.done = make(chan struct{})
	q.mu.Lock()
	q.pending = append(q.pending, r)
	start := q.flushers < maxFlushers
	if start {
		q.flushers++
	}
	q.mu.Unlock()
	if start {
		go q.flush()
	}
	select {
	case <-r.done:
		if r.err != nil {
			return fmt.Errorf("rmq: send to topic %q slot %d: %w", r.topic.Name, r.slot, r.err)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// flush stores queued requests until the queue is empty.
//
// Senders woken by one pipeline usually send again at once. Before taking the
// next batch, the flusher yields its processor a few times while fewer
// requests wait than the last batch carried, so those senders can join it:
// fewer, fuller pipelines, at the cost of a few hundred nanoseconds when
// nobody comes. A lone sender never waits, since its batch was one.
func (q *sendQueue) flush() {
	last := 0
	for {
		q.mu.Lock()
		for yields := 0; len(q.pending) < last && yields < gatherYields; yields++ {
			q.mu.Unlock()
			runtime.Gosched()
			q.mu.Lock()
		}
		n := min(len(q.pending), maxPipeline)
		if n == 0 {
			q.pending = nil
			q.flushers--
			q.mu.Unlock()
			return
		}
		batch := make([]*sendReq, n)
		copy(batch, q.pending)
		q.pending = q.pending[n:]
		q.mu.Unlock()
		last = n
		q.pipelines.Add(1)
		q.sent.Add(int64(n))

		_ = q.store(context.Background(), batch) // errors are per request
		for _, r := range batch {
			close(r.done)
		}
	}
}

// gatherYields bounds how often a flusher yields to let senders join a batch.
const gatherYields = 4

// store writes reqs in one pipeline, sets each request's err, and publishes
// wake-ups for the slots it filled. The returned error is ctx's, if any.
func (q *sendQueue) store(ctx context.Context, reqs []*sendReq) error {
	entries := make([]rdb.Entry, len(reqs))
	for i, r := range reqs {
		entries[i] = r.entry
	}
	errs, pubErr := q.broker.Enqueue(ctx, entries, wakePublications(reqs))
	for i, r := range reqs {
		if errs != nil {
			r.err = errs[i]
		}
	}
	if pubErr != nil {
		// The messages are stored; consumers find them at their next idle poll.
		q.log.Warn("rmq: wake-up publish failed", "err", pubErr)
	}
	return ctx.Err()
}

// wakePublications builds one wake-up per topic: "slot:dueMs,…" with the
// earliest due time per slot (0 for "due now").
func wakePublications(reqs []*sendReq) []rdb.Publication {
	type key struct {
		t    *topicInfo
		slot int
	}
	earliest := make(map[key]int64, len(reqs))
	var order []key
	for _, r := range reqs {
		k := key{r.topic, r.slot}
		d, seen := earliest[k]
		if !seen {
			order = append(order, k)
			earliest[k] = r.dueMs
		} else if r.dueMs < d {
			earliest[k] = r.dueMs
		}
	}
	payloads := make(map[*topicInfo][]byte)
	var topics []*topicInfo
	for _, k := range order {
		b, seen := payloads[k.t]
		if !seen {
			topics = append(topics, k.t)
		} else {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(k.slot), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, earliest[k], 10)
		payloads[k.t] = b
	}
	pubs := make([]rdb.Publication, len(topics))
	for i, t := range topics {
		pubs[i] = rdb.Publication{Channel: t.wake, Payload: string(payloads[t])}
	}
	return pubs
}
