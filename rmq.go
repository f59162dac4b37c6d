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
// Each slot is consumed by one goroutine at a time: in one process by the
// local coordinator, across processes by the ZooKeeper coordinator (package
// coordinator), which hands slots over only after the previous owner has let
// go. See the README for keys, scores, guarantees and limits.
package rmq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/rdb"
)

// Client is the entry point: it defines topics, hands out the Producer,
// subscribes listeners and runs the consumers. Safe for concurrent use.
type Client struct {
	cfg      config
	keys     rdb.Keyspace
	broker   rdb.Broker
	topics   topicCache
	producer *Producer
	waits    string // the retry backoff in ms for retries 1..16, for the cycle script
	counters counters

	mu     sync.Mutex
	state  clientState
	closed atomic.Bool // state == stateClosed, readable without mu on the send path
	subs   map[string]*subscription
	stop   context.CancelFunc // ends consumption gracefully
	done   chan struct{}      // closed when Start returns

	hard       context.Context // ends listeners' contexts and Redis calls: a hard stop
	hardCancel context.CancelFunc
}

type clientState int

const (
	stateNew clientState = iota
	stateStarted
	stateClosed
)

// New returns a client on rdb, which may be a single node, Sentinel or
// Cluster client (redis.NewUniversalClient). The caller owns rdb and closes
// it after Close. On a single node, Send also opens one connection of the
// client's own with rdb's options (see WithSendStream), which Close closes.
// Options are validated here; a bad one fails with ErrInvalidOption or
// ErrInvalidNamespace.
func New(rdb redis.UniversalClient, opts ...Option) (*Client, error) {
	if rdb == nil {
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
	if cfg.coordinator == nil {
		cfg.coordinator = coordinator.NewLocal()
	}
	return newClient(rdb, cfg), nil
}

func newClient(r redis.UniversalClient, cfg config) *Client {
	keys := rdb.NewKeyspace(cfg.namespace)
	c := &Client{cfg: cfg, keys: keys, subs: make(map[string]*subscription)}
	c.broker = rdb.New(r, keys, rdb.WithSendStream(cfg.sendStream), rdb.WithSendCounts(&c.counters.send), rdb.WithLogger(cfg.logger))
	c.hard, c.hardCancel = context.WithCancel(context.Background())
	c.producer = &Producer{c: c}
	waits := make([]string, MaxRetries)
	for i := range waits {
		waits[i] = strconv.FormatInt(max(cfg.backoff(i+1).Milliseconds(), 0), 10)
	}
	c.waits = strings.Join(waits, ",")
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

// Start consumes the subscribed topics until ctx ends or Close is called,
// then shuts down gracefully and returns. It returns the first fatal error
// (a coordinator that cannot go on), or nil after a clean stop.
//
// Shutdown order: (1) the coordinator revokes every slot; (2) each thread
// stops popping, returns popped messages it had not started to store
// unchanged, lets the listener in hand finish, settles outcomes, and releases
// its slots; (3) the coordinator leaves the group; (4) the wake-up listener
// stops. Close bounds the wait for (2) with its context.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	switch c.state {
	case stateClosed:
		c.mu.Unlock()
		return ErrClosed
	case stateStarted:
		c.mu.Unlock()
		return ErrStarted
	}
	c.state = stateStarted
	runCtx, stop := context.WithCancel(ctx)
	c.stop, c.done = stop, make(chan struct{})
	subs := c.subs
	c.mu.Unlock()
	defer close(c.done)
	defer stop()

	member := coordinator.Member{Namespace: c.cfg.namespace, DrainTimeout: c.cfg.consumeTimeout}
	quit := make(chan struct{})
	var threads sync.WaitGroup
	for _, s := range subs {
		member.Topics = append(member.Topics, coordinator.TopicThreads{
			Topic: s.topic.Name, SlotAmount: s.topic.SlotAmount, Threads: len(s.threads),
			Definition: encodeTopic(s.topic.Topic)})
		for _, t := range s.threads {
			threads.Go(func() { t.run(c.hard, quit) })
		}
	}
	wakeCtx, stopWake := context.WithCancel(c.hard)
	var wake sync.WaitGroup
	wake.Go(func() { newWakeListener(c, subs).run(wakeCtx) })

	err := c.cfg.coordinator.Run(runCtx, member, leaseRouter(subs))
	close(quit)
	threads.Wait()
	stopWake()
	wake.Wait()

	c.mu.Lock()
	c.state = stateClosed
	c.closed.Store(true)
	c.mu.Unlock()
	if errors.Is(err, coordinator.ErrTopicConflict) {
		return fmt.Errorf("%w: %v", ErrTopicConflict, err)
	}
	if err != nil {
		return fmt.Errorf("rmq: coordinator: %w", err)
	}
	return nil
}

// Close stops the client gracefully: consumers stop popping, in-flight
// listeners finish and their outcomes are settled, popped messages not yet
// started return to store unchanged. If ctx ends first, listeners' contexts
// are cancelled and Close returns ctx.Err(). Sends in flight get their
// replies (within ctx); Sends after Close fail with ErrClosed. Close closes
// the client's own send connection (see WithSendStream), not the Redis
// client.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	state, stop, done := c.state, c.stop, c.done
	c.state = stateClosed
	c.closed.Store(true)
	c.mu.Unlock()
	defer c.broker.Close(ctx)
	if state != stateStarted {
		c.hardCancel()
		return nil
	}
	stop()
	select {
	case <-done:
		c.hardCancel()
		return nil
	case <-ctx.Done():
		c.hardCancel()
		return ctx.Err()
	}
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
