package rmq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
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
	done  chan struct{} // capacity 1: the flusher signals once, when stored (Send only)
	queue *sendQueue    // set while streamed
}

// reqPool recycles the requests of Send (with their channels).
var reqPool = sync.Pool{New: func() any { return &sendReq{done: make(chan struct{}, 1)} }}

// sendQueue coalesces concurrent Sends. With a stream (a single Redis node),
// see sendstream.go. Otherwise a Send appends its request, and a flusher
// goroutine (at most maxFlushers, started on demand, gone when the queue is
// empty) stores everything queued in one pipeline. No timer waits for
// company: while one pipeline is in flight the next one fills up.
type sendQueue struct {
	broker rdb.Broker
	stream *rdb.Stream // nil: pipelines through the broker
	log    *slog.Logger

	mu       sync.Mutex
	pending  []*sendReq
	flushers int
	writer   streamWriter // the stream's writer state (see its doc)

	pipelines atomic.Int64  // pipelines (or stream writes) of coalesced sends
	sent      *atomic.Int64 // messages stored (the client's counter)
	retries   *atomic.Int64 // streamed sends written again (the client's counter)
}

// send queues r (from reqPool) and waits until it is stored or ctx ends.
func (q *sendQueue) send(ctx context.Context, r *sendReq) error {
	if q.stream != nil {
		return q.streamRetries(ctx, r)
	}
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
	if err := q.await(ctx, r); err != nil {
		return err
	}
	return q.recycle(r)
}

// await waits until r is done or ctx ends. If ctx ends first, r stays with
// whoever holds it and is not recycled.
func (q *sendQueue) await(ctx context.Context, r *sendReq) error {
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recycle returns r to reqPool and the outcome it carried.
func (q *sendQueue) recycle(r *sendReq) error {
	err := r.err
	if errors.Is(err, rdb.ErrStreamClosed) {
		err = ErrClosed
	} else if err != nil {
		err = fmt.Errorf("rmq: send to topic %q slot %d: %w", r.topic.Name, r.slot, err)
	}
	*r = sendReq{done: r.done}
	reqPool.Put(r)
	return err
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

		_ = q.store(context.Background(), batch) // errors are per request
		for _, r := range batch {
			r.done <- struct{}{}
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
	stored := int64(len(reqs))
	for i, r := range reqs {
		if errs != nil {
			if r.err = errs[i]; r.err != nil {
				stored--
			}
		}
	}
	q.sent.Add(stored)
	if pubErr != nil {
		// The messages are stored; consumers find them at their next idle poll.
		q.log.Warn("rmq: wake-up publish failed", "err", pubErr)
	}
	return ctx.Err()
}
