package rmq

import (
	"sync/atomic"

	"github.com/rmq-go/rmq/internal/rdb"
)

// Metrics are a client's counters since New. Read them with Client.Metrics
// and export them to whatever monitoring you use.
type Metrics struct {
	Sent        int64 // messages stored by Send and SendBatch
	SendRetries int64 // Sends written again after a retryable failure: a broken connection, a Cluster redirection (MOVED, ASK), a refusal such as LOADING (see WithSendStream)
	// SendsAbandoned are Sends whose ctx ended while they waited to be
	// written: they returned ctx.Err() and were not written, so not stored.
	SendsAbandoned int64
	// SendWrites are the writes that put queued Sends on the wire: on a
	// single node one stream write or pipeline each; on a Cluster one for
	// all the masters it reached (a stream write or pipeline to each).
	// SendBatch is not counted here.
	SendWrites int64
	// SendsWritten are the Sends those writes carried, retries included:
	// SendsWritten/SendWrites is how many Sends a write took at once, which
	// grows with the number of concurrent Sends (see WithSendStream).
	SendsWritten int64
	Delivered    int64 // listener calls that returned: Committed + Failed + NotOwner
	Redelivered  int64 // listener calls of a message delivered before (Attempt > 1)
	Committed    int64 // listener calls that returned nil
	Failed       int64 // listener calls that returned an error or panicked (rolled back)
	Panics       int64 // of which panics
	NotOwner     int64 // listener calls that returned ErrNotOwner (restored unchanged)
	Restored     int64 // popped messages handed back unstarted (revoked slot, shutdown, long batch)
	Fenced       int64 // pops refused because a newer owner holds the slot
	RedisErrors  int64 // failed Redis calls of consumers (each followed by a backoff)
}

// counters backs Metrics.
// The counts of listener calls and their outcomes are the sums of the
// topics' (topicMetrics).
type counters struct {
	send                        rdb.SendCounts // Sent, SendRetries, SendsAbandoned, SendWrites, SendsWritten
	panics, fenced, redisErrors atomic.Int64
}

// Metrics returns the client's counters.
func (c *Client) Metrics() Metrics {
	m := &c.counters
	out := Metrics{Sent: m.send.Sent.Load(), SendRetries: m.send.Retries.Load(),
		SendsAbandoned: m.send.Abandoned.Load(), SendWrites: m.send.Writes.Load(),
		SendsWritten: m.send.Written.Load(), Panics: m.panics.Load(),
		Fenced: m.fenced.Load(), RedisErrors: m.redisErrors.Load()}
	c.topics.sumCalls(&out)
	out.Delivered = out.Committed + out.Failed + out.NotOwner
	return out
}

// sumCalls adds the delivery counts of every topic's metrics, a deleted
// one's compact copy included (its nil shards count nothing), to out.
func (c *topicCache) sumCalls(out *Metrics) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, tm := range c.metrics {
		for _, cm := range tm.calls {
			if cm == nil {
				continue
			}
			out.Redelivered += cm.redelivered.Load()
			out.Committed += cm.committed.Load()
			out.Failed += cm.failed.Load()
			out.NotOwner += cm.notOwner.Load()
			out.Restored += cm.restored.Load()
		}
	}
}
