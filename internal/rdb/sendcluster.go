package rdb

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// sendCluster is the full-duplex strategy on a Cluster client: a send stream
// per master (sendstream.go), each entry written to the master that the
// client's slot map names for its key. Wake-ups go with the entries they
// follow, on the same stream, to the sharded channel of a slot of that
// master (SPUBLISH), so they stay on its shard.
//
// A failure that says the slot map may be stale (a dead or refusing node,
// MOVED, ASK, CLUSTERDOWN, TRYAGAIN) asks the topology for a reload, and the
// sender sends the entry again: at once after a redirection, to the node it
// named (redirect.go), else after a backoff, up to the Cluster's
// MaxRedirects times, as go-redis does. A dead
// master fails only the sends of its own slots; the other masters' streams
// go on.
type sendCluster struct {
	client  *redis.ClusterClient
	topo    *topology
	ack     ReplicaAck
	wakes   *wakeOutcome // the broker's log of failed wake-ups
	retries retryPolicy

	mu      sync.Mutex
	streams map[string]*sendStream // by master address
	closed  bool

	timer wakeTimer // brings the writer back for held wake-ups

	// The writer's.
	groups map[*sendStream][]*request
	order  []*sendStream
	pruned time.Time // when idle streams were last looked for (pruneIdle)

	idleDrop time.Duration // streamIdleDrop; shorter in tests
}

// clusterSpinPolls is the polling budget of a Cluster stream's reader (see
// spinread.go): several readers polling at once cost the cores that the
// Cluster's nodes need, so they park sooner than a single node's. Measured
// on the benchmark's Cluster (16 senders, 3 masters): 256 polls cost 16 µs
// of client CPU per message, 4 to 32 polls 10 to 12 µs, at the same rate.
const clusterSpinPolls = 16

// errNoStream fails the sends of a node whose options a stream cannot honour.
var errNoStream = errors.New("rdb: no send stream for this node's options")

// newSendCluster returns the strategy for client, or nil if its options are
// ones a stream cannot honour (see newSendStream).
func newSendCluster(client *redis.ClusterClient, ack ReplicaAck, wakes *wakeOutcome) *sendCluster {
	o := client.Options()
	if o.OnConnect != nil || o.StreamingCredentialsProvider != nil {
		return nil
	}
	return &sendCluster{client: client, topo: topologyOf(client), ack: ack, wakes: wakes, retries: clusterRetries(o),
		streams: make(map[string]*sendStream), groups: make(map[*sendStream][]*request), idleDrop: streamIdleDrop,
		timer: wakeTimer{hold: wakeHold}}
}

// write implements strategy: each request to its master's stream, then the
// held wake-ups that have waited long enough (see heldwakes.go). A request
// without an entry is the wake timer's: it only asks for that.
func (c *sendCluster) write(batch []*request) {
	ctx := context.Background()
	for _, r := range batch {
		if r.entry.Key == "" {
			r.finish(nil)
			continue
		}
		s, err := c.streamFor(ctx, &r.entry)
		if err != nil {
			r.finish(err)
			continue
		}
		if len(c.groups[s]) == 0 {
			c.order = append(c.order, s)
		}
		c.groups[s] = append(c.groups[s], r)
	}
	now := time.Now()
	for _, s := range c.order {
		s.write(c.groups[s])
		s.lastWrite = now
		clear(c.groups[s])
		c.groups[s] = c.groups[s][:0]
	}
	if c.flushWakes(false) {
		c.timer.arm()
	}
	c.pruneIdle(now)
}

// flushWakes writes the requests parked on every stream whose WAIT has
// answered and whose connection is up (ackpark.go), then publishes the held wake-ups of every stream
// that are due (all of them if now is set); it reports whether some are
// still held.
func (c *sendCluster) flushWakes(now bool) bool {
	c.listStreams()
	held := false
	for _, s := range c.order {
		s.writeParked()
		if s.flushWakes(now) {
			held = true
		}
	}
	clear(c.order)
	c.order = c.order[:0]
	return held
}

// streamFor returns the stream of the master serving e's key (or of the
// node a redirection named for e), made on first use.
func (c *sendCluster) streamFor(ctx context.Context, e *Entry) (*sendStream, error) {
	var opt *redis.Options
	if e.Node != "" {
		o, err := c.topo.optionsAt(ctx, e.Node, e.Key)
		if err != nil {
			c.topo.failed(err)
			return nil, err
		}
		opt = o
	} else {
		node, err := c.client.MasterForKey(ctx, e.Key)
		if err != nil {
			c.topo.failed(err)
			return nil, err
		}
		opt = node.Options()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	s := c.streams[opt.Addr]
	if s == nil {
		if s = newStreamOn(opt, c.ack, c.wakes); s == nil {
			return nil, errNoStream
		}
		s.holding, s.spin, s.sharded = &heldWakes{hold: c.timer.hold}, clusterSpinPolls, true
		s.kick = c.kick
		s.lastWrite = time.Now()
		c.streams[opt.Addr] = s
	}
	return s, nil
}

// streamIdleDrop is how long a master's stream may go without a write
// before the writer closes and forgets it: the master left the Cluster, or
// gave all its slots away (a shrink, a resharding), or only served keys no
// longer sent to. A later write to that master makes a new stream.
const streamIdleDrop = 5 * time.Minute

// pruneIdle closes and forgets the streams idle for streamIdleDrop with
// nothing in flight or held; it looks at most every streamIdleDrop/5. The
// writer calls it, so no stream it drops is in use.
func (c *sendCluster) pruneIdle(now time.Time) {
	if now.Sub(c.pruned) < c.idleDrop/5 {
		return
	}
	c.pruned = now
	var idle []*sendStream
	c.mu.Lock()
	for addr, s := range c.streams {
		if now.Sub(s.lastWrite) >= c.idleDrop && !s.asideBusy() && !s.inFlight() && s.holding.since.IsZero() && len(s.parked) == 0 {
			delete(c.streams, addr)
			delete(c.groups, s)
			idle = append(idle, s)
		}
	}
	c.mu.Unlock()
	for _, s := range idle {
		s.close(context.Background()) // nothing in flight: at once
	}
}

// duplex implements strategy.
func (c *sendCluster) duplex() bool { return true }

// clusterElectYields is how often a Send elected writer yields on a Cluster
// while commands are in flight. A reply from one master leaves the others'
// owed, so fewer senders are runnable at each yield than on one server,
// and each master's Redis spends per write what one server does: more
// yields gather larger writes. Measured for Send from 16 goroutines on a
// 3-master Cluster: 4 yields against 1, +11 % (the median of 8 interleaved
// pairs); 8 against 4 (BenchmarkSendCluster, 12 interleaved runs each),
// 7.4 messages per write instead of 5.8, the nodes' CPU 27.4 against 31.5
// µs per message and 40.0k/s against 35.3k/s (medians of the last 8).
const clusterElectYields = 8

// electYields implements gatherer.
func (c *sendCluster) electYields() int { return clusterElectYields }

// inFlight implements strategy: whether any master's stream awaits replies.
func (c *sendCluster) inFlight() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.streams {
		if s.inFlight() {
			return true
		}
	}
	return false
}

// retryAfter implements strategy: a failure that says the slot map may be
// stale reloads it; a redirection goes again at once, other retryable
// failures after the Cluster's backoff.
func (c *sendCluster) retryAfter(err error, attempt int) (time.Duration, bool) {
	stale := c.topo.failed(err)
	if attempt >= c.retries.max || !(stale || retryable(err)) {
		return 0, false
	}
	if redirected(err) {
		return 0, true
	}
	return c.retries.delay(attempt), true
}

// listStreams puts every master's stream in c.order (the writer's, or
// close's once no writer is at work), which the caller clears.
func (c *sendCluster) listStreams() {
	c.order = c.order[:0]
	c.mu.Lock()
	for _, s := range c.streams {
		c.order = append(c.order, s)
	}
	c.mu.Unlock()
}

// kick brings the sender's writer back, for requests parked on a stream
// (ackpark.go): it queues a request without an entry, as the wake timer does.
func (c *sendCluster) kick() {
	if q := c.timer.queue; q != nil {
		q(&request{done: make(chan struct{}, 1)})
	}
}

// close implements strategy: the parked requests are written once their
// WAIT answers (or is past due) and the held wake-ups go out, then every
// master's stream closes, in parallel. The sender calls it once no writer is
// at work.
func (c *sendCluster) close(ctx context.Context) {
	c.listStreams()
	for _, s := range c.order {
		s.closeParked(ctx)
	}
	clear(c.order)
	c.order = c.order[:0]
	c.flushWakes(true)
	c.mu.Lock()
	c.closed = true
	streams := make([]*sendStream, 0, len(c.streams))
	for _, s := range c.streams {
		streams = append(streams, s)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range streams {
		wg.Go(func() { s.close(ctx) })
	}
	wg.Wait()
}
