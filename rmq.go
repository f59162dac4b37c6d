// Package rmq turns Redis into a message queue with what brokers lack:
// merging of duplicate messages, priorities, delivery at a fixed time to the
// millisecond, and serialized per-key consumption across a whole cluster
// without locks.
//
// A topic is split into a power-of-two number of slots; a message lands in
// slot CRC32(slot basis) mod slots, the basis being the content unless the
// sender names one. Each slot is three sorted sets in Redis that share one
// Cluster hash tag: store (waiting), prepare (handed to a consumer, not yet
// settled) and dead (out of retries), plus a retry set for failed messages
// that wait out a backoff. Consumption is two-phase and at least once: a Lua
// script moves due messages from store to prepare, the listener runs, and the
// outcome commits (drop from prepare) or rolls back (retry, or dead after 16
// retries). A prepare entry older than the consume timeout is rolled back as
// failed, so a crashed consumer loses nothing.
//
// Each slot is consumed by one goroutine at a time across every process of
// a namespace: the Redis coordinator (the default; package coordinator) or
// the ZooKeeper coordinator (package coordinator/zookeeper) hands a slot over
// only after the previous owner has let go or its lease has provably
// expired, and every pop checks the slot's owner record in Redis. The local
// coordinator serves one process alone. See the README for keys, scores,
// guarantees and limits: its Layout section names the file of each hop.
package rmq

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/rdb"
)

// Client is the entry point: it defines topics, hands out the Producer,
// subscribes listeners and runs the consumers. Safe for concurrent use.
type Client struct {
	cfg    config
	keys   rdb.Keyspace
	broker rdb.Broker
	// multiNode: the Redis is a Cluster, whose slots live on several nodes,
	// so a thread does not wait long for one slot's node (cyclecall.go).
	multiNode bool
	// declines: the slots whose masters this process cannot reach (reach.go);
	// nil unless a Cluster's coordinator honours declines. Set by New.
	declines *coordinator.Declines
	topics   topicCache
	producer *Producer
	waits    rdb.RetryWaits
	counters counters
	clock    redisClock // the Redis clock's skew, for wake-ups' timers

	mu     sync.Mutex
	state  clientState
	closed atomic.Bool // state == stateClosed, readable without mu on the send path
	subs   map[string]*subscription
	stop   context.CancelFunc // ends consumption gracefully
	// stopping: Shutdown asked consumption to end (guarded by mu).
	stopping bool
	done     chan struct{} // closed when Start returns

	hard        context.Context // ends listeners' contexts and consumers' Redis calls
	hardCancel  context.CancelFunc
	abandoned   chan struct{} // closed when consumption is abandoned (see Shutdown)
	abandonOnce sync.Once
	closeMu     sync.Mutex     // one Close at a time closes the producer
	coordDone   chan struct{}  // closed when the coordinator's Run returned
	consumers   callGate       // consumers' Redis calls; shut when consumption is abandoned
	batches     callGate       // SendBatch's pipelines; shut by Close, which waits for them
	background  sync.WaitGroup // the wake-up listener and the presence entry
	coord       rdb.Coordination
	backlogs    backlogCache
	stats       statsFlusher
	redis       redis.UniversalClient
}

// New returns a client on client, which may be a single node, Sentinel or
// Cluster client (redis.NewUniversalClient). The caller owns it and closes it
// after Close. Send also opens connections of the client's own with its
// options, one on a single node, one per master on a Cluster (see
// WithSendStream), which Close closes.
// Options are validated here; a bad one fails with ErrInvalidOption or
// ErrInvalidNamespace.
func New(client redis.UniversalClient, opts ...Option) (*Client, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil redis client", ErrInvalidOption)
	}
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if len(cfg.errs) > 0 {
		return nil, cfg.errs[0]
	}
	if err := checkReplicaAck(client, cfg.replicaAck); err != nil {
		return nil, err
	}
	if cfg.coordinator == nil {
		cfg.coordinator = coordinator.NewRedis(client, coordinator.RedisConfig{Logger: cfg.logger})
	}
	return newClient(client, cfg), nil
}

func newClient(r redis.UniversalClient, cfg config) *Client {
	keys := rdb.NewKeyspace(cfg.namespace)
	c := &Client{cfg: cfg, keys: keys, subs: make(map[string]*subscription)}
	c.broker = rdb.New(r, keys, rdb.WithSendStream(cfg.sendStream), rdb.WithSendCounts(&c.counters.send),
		rdb.WithLogger(cfg.logger), rdb.WithReplicaAck(cfg.replicaAck))
	c.hard, c.hardCancel = context.WithCancel(context.Background())
	c.abandoned = make(chan struct{})
	c.coord = rdb.NewCoordination(r, keys)
	c.redis = r
	_, c.multiNode = r.(*redis.ClusterClient)
	if h, ok := cfg.coordinator.(coordinator.DeclineHonourer); ok && h.HonoursDeclines() && c.multiNode {
		c.declines = coordinator.NewDeclines() // set here, never again: TopicMetrics reads it at any time
	}
	c.stats.c, c.stats.id = c, rand.Text()
	c.producer = &Producer{c: c}
	c.waits = rdb.NewRetryWaits(cfg.backoff)
	return c
}

// Producer returns the client's producer.
func (c *Client) Producer() *Producer { return c.producer }

// Namespace returns the client's namespace.
func (c *Client) Namespace() string { return c.cfg.namespace }

func (c *Client) checkOpen() error {
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// leaseRouter passes the coordinator's leases to the subscriptions' threads.
type leaseRouter map[string]*subscription

// Assigned implements coordinator.Handler.
func (r leaseRouter) Assigned(l *coordinator.Lease) {
	s := r[l.Topic()]
	if s == nil || l.Thread() < 0 || l.Thread() >= len(s.threads) || l.Slot() < 0 || l.Slot() >= s.topic.SlotAmount {
		l.Release() // not ours to serve: give it straight back
		return
	}
	s.threads[l.Thread()].assign(l)
}

// Revoked implements coordinator.Handler.
func (r leaseRouter) Revoked(l *coordinator.Lease) {
	if s := r[l.Topic()]; s != nil && l.Thread() >= 0 && l.Thread() < len(s.threads) {
		s.threads[l.Thread()].revoke()
	}
}
