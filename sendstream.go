package rmq

import (
	"context"
	"log/slog"
	"runtime"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/wait"
)

// On a single Redis node, Sends share the client's own full-duplex
// connection (rdb.Stream). A Send queues its request; if no other Send is
// writing, it writes everything queued itself, with one wake-up publication
// per topic behind the messages, and waits for its reply like the others.
// Whoever writes takes what queued meanwhile, so writes grow with the load
// while a lone Send still goes out at once: Redis reads the commands of
// several writes in one go, and nobody waits for a round trip to end before
// the next write starts. Under load the stream's reader lets each sender it
// wakes run on the reader's processor before handing back the next reply,
// and a Send taking the writer role while commands are in flight yields once
// first: the senders just woken then queue into its write (about two
// messages per write instead of one), without waking another thread to run
// them and without leaving Redis idle.

// streamWriter is the state of the one Send writing at a time: busy is
// guarded by the queue's mu, the buffers belong to whoever set busy.
type streamWriter struct {
	busy    bool
	batch   []*sendReq
	entries []rdb.Entry
	done    []rdb.Completer
	wakes   wakeSet
	pubs    []rdb.Publication
	payload []byte
}

// maxWriterRounds is how many writes a Send makes for others before it hands
// the rest to a goroutine and returns to its own reply.
const maxWriterRounds = 4

// streamRetries streams r until it is stored, fails for good, or ctx ends. A
// failure of the connection or a "not now" from the server (rdb.Retryable)
// sends r again after a backoff, as often as the go-redis client retries: the
// command may have run before the failure, and running it twice stores the
// same entry.
func (q *sendQueue) streamRetries(ctx context.Context, r *sendReq) error {
	for attempt := 0; ; attempt++ {
		q.streamSend(r)
		if err := q.await(ctx, r); err != nil {
			return err
		}
		if r.err == nil || attempt >= q.stream.MaxRetries() || !rdb.Retryable(r.err) {
			return q.recycle(r)
		}
		q.retries.Add(1)
		if wait.Sleep(ctx, q.stream.RetryBackoff(attempt)); ctx.Err() != nil {
			return ctx.Err()
		}
		r.err = nil
	}
}

// streamSend queues r and writes the queue unless another Send is writing.
func (q *sendQueue) streamSend(r *sendReq) {
	r.queue = q
	q.mu.Lock()
	q.pending = append(q.pending, r)
	if q.writer.busy {
		q.mu.Unlock()
		return
	}
	q.writer.busy = true
	q.mu.Unlock()
	if q.stream.InFlight() {
		// Redis has work meanwhile: yield once, so that the senders already
		// runnable (woken by the replies just read) join this write. An idle
		// connection is written at once.
		runtime.Gosched()
	}
	if !q.writeQueued(maxWriterRounds) {
		go q.writeQueued(-1)
	}
}

// writeQueued writes what is queued, at most rounds times (no limit if
// negative), and gives up the writer role when the queue is empty. It
// returns false if it stopped with requests still queued, keeping the role.
func (q *sendQueue) writeQueued(rounds int) bool {
	w := &q.writer
	for i := 0; rounds < 0 || i < rounds; i++ {
		q.mu.Lock()
		if len(q.pending) == 0 {
			w.busy = false
			q.mu.Unlock()
			return true
		}
		w.batch = append(w.batch[:0], q.pending...)
		clear(q.pending)
		q.pending = q.pending[:0]
		q.mu.Unlock()

		w.entries, w.done = w.entries[:0], w.done[:0]
		for _, r := range w.batch {
			w.entries = append(w.entries, r.entry)
			w.done = append(w.done, r)
		}
		w.pubs, w.payload = w.wakes.publications(w.batch, w.pubs[:0], w.payload)
		q.pipelines.Add(1)
		q.stream.Write(w.entries, w.done, w.pubs, (*wakeOutcome)(q.log))
		clear(w.batch)
		clear(w.entries)
		clear(w.done)
		clear(w.pubs)
	}
	return false
}

// Complete implements rdb.Completer: the stream's outcome of r.
func (r *sendReq) Complete(err error) {
	r.err = err
	if err == nil {
		r.queue.sent.Add(1)
	}
	r.done <- struct{}{}
}

// wakeOutcome logs a failed wake-up publication: the messages are stored, and
// consumers find them at their next idle poll.
type wakeOutcome slog.Logger

// Complete implements rdb.Completer.
func (w *wakeOutcome) Complete(err error) {
	if err != nil {
		(*slog.Logger)(w).Warn("rmq: wake-up publish failed", "err", err)
	}
}

// closeStream waits up to ctx for sends in flight, then closes the stream.
func (q *sendQueue) closeStream(ctx context.Context) {
	if q.stream != nil {
		q.stream.Close(ctx)
	}
}
