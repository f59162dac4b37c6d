// Package rdb holds all Redis I/O of RMQ behind the Broker interface, so the
// root package never builds a command by hand and tests can wrap the broker
// with fault injection.
package rdb

import (
	"context"
	"log/slog"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Broker is every Redis operation RMQ performs.
type Broker interface {
	// SaveTopic stores def for name unless a definition exists; it returns the
	// definition stored after the call (def itself, or the earlier one), and
	// whether this call stored it.
	SaveTopic(ctx context.Context, name, def string) (stored string, created bool, err error)
	// UnsaveTopic deletes the definition of name if it is def: the undoing
	// of a SaveTopic that created it, which leaves a later one alone.
	UnsaveTopic(ctx context.Context, name, def string) error
	// LoadTopic returns the stored definition of name; found is false if none.
	LoadTopic(ctx context.Context, name string) (def string, found bool, err error)
	// LoadTopics returns every stored topic definition by name.
	LoadTopics(ctx context.Context) (map[string]string, error)
	// Send stores one entry, then publishes its wake-up: it returns once Redis
	// has stored it, or with why not. Concurrent Sends share writes, and a
	// failed connection is retried as the go-redis client would (see the
	// README's Sending section). If ctx ends first, Send returns ctx.Err() as
	// it is, and the entry may or may not be stored; after Close it returns
	// ErrClosed, or ErrClosedInFlight (which wraps it) when its command was
	// written and Close stopped waiting for the reply. The member is not
	// read after Send returns with a nil error or ErrClosed; after any other
	// error a write under way may still read it (Producer.Send copies it
	// when its ctx can end).
	Send(ctx context.Context, e Entry) error
	// Enqueue stores entries through go-redis pipelines of up to 512 entries
	// (grouped per key, copies of one member merged as separate commands would
	// leave them), each followed by the wake-ups of its entries; pubs follow
	// the last. It returns nil when every entry was stored, else one error per
	// entry (nil where that entry was stored): after a pipeline with a failed
	// entry (one stored but not acknowledged by replicas, ErrNotReplicated,
	// does not count), or once ctx has ended, the rest are not sent. The second result
	// is the first failed publication's error, which is also logged: the
	// entries are stored, and consumers find them at their next idle sweep.
	Enqueue(ctx context.Context, entries []Entry, pubs []Publication) ([]error, error)
	// Close stops sending: later Sends fail with ErrClosed; Sends already
	// queued are written and their replies awaited, all within ctx (those
	// whose replies ctx cut short fail with ErrClosedInFlight), then the
	// sender's own connection is closed. The go-redis client stays open.
	Close(ctx context.Context)
	// Node names the Redis node that serves a slot, for backing off from a
	// failing node without holding back the slots of others: the address of
	// its master on a Cluster, "" on a single node.
	Node(keys SlotKeys) string
	// RefreshTopology asks for a reload of a Cluster's slot map (at most
	// every 200 ms), for a consumer that holds back the slots of a failing
	// node; nothing on a single node.
	RefreshTopology()
	// PingNode pings the master serving the slot of keys and names it (as
	// Node does): how a process finds a master it alone cannot reach.
	PingNode(ctx context.Context, keys SlotKeys) (node string, err error)
	// AnyWaiting reports whether any of slots holds a message in store,
	// prepare or retry: the safety net of idle slots, in few commands.
	AnyWaiting(ctx context.Context, slots []SlotKeys) (bool, error)
	// Cycle runs the cycle script on one slot.
	Cycle(ctx context.Context, keys SlotKeys, req *CycleRequest) (CycleResult, error)
	// Cycles runs the cycle script on several slots of one node in one round
	// trip, setting each call's Res and Err as Cycle would.
	Cycles(ctx context.Context, calls []*SlotCycle)
	// Cancel removes a pending member from a slot; it reports whether one was removed.
	Cancel(ctx context.Context, keys SlotKeys, member []byte) (bool, error)
	// Backlog returns the sizes of each slot's sets and, with dueTimes, the
	// earliest due time in each store, in one pipeline; and the Redis time.
	Backlog(ctx context.Context, slots []SlotKeys, dueTimes bool) ([]SlotBacklog, int64, error)
	// Controls returns every topic's stored flow control (topic → JSON).
	Controls(ctx context.Context) (map[string]string, error)
	// SetControl stores a topic's flow control ("" removes it) and announces it.
	SetControl(ctx context.Context, topic, control string) error
	// DeleteSlot deletes a slot's keys in one script, only if its sets are
	// all empty (whatever they hold, with force); it reports whether it
	// deleted them, and the sets' sizes before the call.
	DeleteSlot(ctx context.Context, keys SlotKeys, force bool) (deleted bool, before SlotCounts, err error)
	// DeleteTopic removes a topic's records beside its slots (assignment,
	// shared metrics, flow control), then its definition.
	DeleteTopic(ctx context.Context, topic string) error
	// PresenceTopics returns the topics each consuming process named.
	PresenceTopics(ctx context.Context) (map[string]string, error)
	// ShareBreakers writes (or, with an empty State, deletes) a process's
	// breaker state of each given topic, in one pipeline.
	ShareBreakers(ctx context.Context, process string, states []BreakerShare) error
	// BreakerStates returns what the processes shared of their breaker of a
	// topic: process → "<state>|<Unix ms>".
	BreakerStates(ctx context.Context, topic string) (map[string]string, error)
	// AddStats adds a batch of a client's metrics to the namespace's shared
	// ones, once however often it is sent; it reports whether it added it now.
	AddStats(ctx context.Context, batch StatsBatch) (bool, error)
	// Stats returns a topic's shared metrics, all-time and per minute.
	Stats(ctx context.Context, topic string, from, to int64) (map[string]int64, []map[string]int64, error)
	// Counts returns the sizes of each slot's sets, in one pipeline.
	Counts(ctx context.Context, slots []SlotKeys) ([]SlotCounts, error)
	// Dead returns up to limit dead entries of a slot, oldest death first.
	Dead(ctx context.Context, keys SlotKeys, limit int64) ([]DeadEntry, error)
	// Requeue moves up to limit dead members of a slot back to store (only
	// members, when given); it returns how many moved.
	Requeue(ctx context.Context, keys SlotKeys, limit int, members [][]byte) (int64, error)
	// Purge deletes every dead member of a slot; it returns how many.
	Purge(ctx context.Context, keys SlotKeys) (int64, error)
	// Pending returns up to limit members of a slot's store in pop order
	// (priority: highest score first), then up to limit of its retry set,
	// and those whose wait is over by nowMs that the next cycle moves to
	// store; on a RangeMerge topic (merging) without the members of store
	// that also wait in retry (merged into it).
	Pending(ctx context.Context, keys SlotKeys, limit int64, priority, merging bool, nowMs int64) ([]PendingEntry, error)
	// DeleteDead deletes one dead member of a slot; it reports whether it was there.
	DeleteDead(ctx context.Context, keys SlotKeys, member []byte) (bool, error)
	// PublishWake sends one wake-up publication (see Publication). If that
	// fails, it returns the error, which is handled as every failed wake-up
	// publication is (wakeOutcome.failedOn: logged, published again).
	PublishWake(ctx context.Context, p Publication) error
	// ShardedWakes reports whether wake-ups go to the slots' sharded channels
	// (SlotKeys.Wake): on a Cluster.
	ShardedWakes() bool
	// Listen follows channels until ctx ends, and on a Cluster the sharded
	// channels shards too, handing deliver each *redis.Message and
	// *redis.Subscription (a subscription or a resubscription after a
	// reconnect, across which messages were lost; Kind "ssubscribe" for a
	// sharded channel), one at a time; on a Cluster it survives the death of
	// a master (see pubsub.go). It returns once nothing of it runs any more.
	Listen(ctx context.Context, channels, shards []string, deliver func(msg any))
}

// Entry is one message to add to a store set, and the wake-up that follows it.
type Entry struct {
	Key    string
	Score  float64
	Member []byte
	NX     bool // add only if absent (RangeMerge keeps the first due time)
	Wake   Wake
	// Counted, if set, counts the entry once Redis stored it (the topic's
	// Sent, whether or not its Send or SendBatch was still waiting), where
	// SendCounts.Sent counts it: at its reply on a stream, after its
	// pipeline otherwise.
	Counted *atomic.Int64
	// Node is the Cluster node a redirection named for the entry's next
	// write ("" for the one the slot map names), and Asking whether that
	// write goes behind ASKING (redirect.go).
	Node   string
	Asking bool
}

// Publication is a pub/sub message sent after the entries of a write: to
// Channel with PUBLISH on a single node, to Shard with SPUBLISH on a Cluster
// (Channel there when Shard is empty).
type Publication struct {
	Channel string
	Shard   string // the sharded channel of the first slot the payload names
	Payload []byte
}

// SlotCounts are the sizes of one slot's sets.
type SlotCounts struct {
	Store, Retry, Prepare, Dead int64
}

// DeadEntry is one dead message.
type DeadEntry struct {
	Member []byte
	DiedMs int64
}

// redisBroker is the Broker on a go-redis client, single node or cluster.
type redisBroker struct {
	rdb    redis.UniversalClient
	keys   Keyspace
	topo   *topology // the Cluster's; nil on a single node
	send   *sender
	counts *SendCounts
	log    *slog.Logger
	wakes  *wakeOutcome // logs failed wake-up publications, publishes them again
	ack    ReplicaAck   // writes of entries wait for replicas
	moved  redirectNodes
}

var _ Broker = (*redisBroker)(nil)

// New returns the Broker on rdb for the namespace of keys.
func New(rdb redis.UniversalClient, keys Keyspace, opts ...Option) Broker {
	o := options{stream: true, counts: new(SendCounts), log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	wakes := &wakeOutcome{log: o.log}
	wakes.retry = newWakeRetry(func(ctx context.Context, channel string, payload []byte) error {
		// Through the namespace's master, which the process reaches for its
		// controls and counts anyway: a node of go-redis's choosing may be
		// the one whose trouble failed the first publication.
		return publishAt(ctx, rdb, keys.Controls(), channel, payload)
	}, wakes.Complete)
	b := &redisBroker{rdb: rdb, keys: keys, topo: topologyOf(rdb), counts: o.counts, log: o.log,
		wakes: wakes, ack: o.ack}
	var st strategy = &sendPipe{b: b}
	if o.stream {
		if cc, ok := rdb.(*redis.ClusterClient); ok {
			if s := newSendCluster(cc, o.ack, b.wakes); s != nil {
				st = s
			}
		} else if s := newSendStream(rdb, o.ack, b.wakes); s != nil {
			st = s
		}
	}
	b.send = newSender(st, o.counts)
	if sc, ok := st.(*sendCluster); ok {
		sc.timer.queue = b.send.queue
	}
	return b
}

// Option configures the sender of a Broker made by New.
type Option func(*options)

type options struct {
	stream bool
	counts *SendCounts
	log    *slog.Logger
	ack    ReplicaAck
}

// WithSendStream sets whether Send uses the full-duplex stream where the
// go-redis client allows it (default on), or go-redis pipelines.
func WithSendStream(on bool) Option { return func(o *options) { o.stream = on } }

// WithSendCounts sets the counters the sender adds to (default: its own).
func WithSendCounts(c *SendCounts) Option { return func(o *options) { o.counts = c } }

// WithReplicaAck makes every write of entries (Send and Enqueue) wait until
// ack.Replicas replicas have it, for at most ack.Timeout; entries the wait
// did not confirm fail with ErrNotReplicated. Default: no wait.
func WithReplicaAck(ack ReplicaAck) Option { return func(o *options) { o.ack = ack } }

// WithLogger sets the logger of failed wake-up publications (default: silent).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// Send implements Broker.
func (b *redisBroker) Send(ctx context.Context, e Entry) error { return b.send.send(ctx, e) }

// Close implements Broker.
func (b *redisBroker) Close(ctx context.Context) {
	b.send.close(ctx)
	b.wakes.retry.close()
	b.moved.close()
}
