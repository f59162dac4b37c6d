package rmq

import (
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/rdb"
)

// Option configures a Client; see New.
type Option func(*config)

// config is the validated configuration of a Client.
type config struct {
	namespace      string
	consumeTimeout time.Duration
	backoff        BackoffFunc
	logger         *slog.Logger
	coordinator    coordinator.Coordinator
	batchSize      int
	idlePoll       time.Duration
	idleSweep      time.Duration // 0: the default (see sweepInterval)
	maxContent     int
	sendStream     bool
	replicaAck     rdb.ReplicaAck
	errs           []error
}

func defaultConfig() config {
	return config{
		namespace:      "rmq",
		consumeTimeout: 30 * time.Second,
		backoff:        DefaultBackoff,
		logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		batchSize:      256,
		idlePoll:       3 * time.Second,
		maxContent:     1 << 20,
		sendStream:     true,
	}
}

func (c *config) fail(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOption}, args...)...))
}

// WithNamespace prefixes every Redis key (and ZooKeeper path) of the client:
// clients in different namespaces never see each other's topics. Default
// "rmq". Same rules as a topic name.
func WithNamespace(ns string) Option {
	return func(c *config) {
		if err := checkName(ns); err != nil {
			c.errs = append(c.errs, fmt.Errorf("%w %q: %v", ErrInvalidNamespace, ns, err))
			return
		}
		c.namespace = ns
	}
}

// MaxConsumeTimeout is the longest consume timeout WithConsumeTimeout takes
// (a year).
const MaxConsumeTimeout = 365 * 24 * time.Hour

// WithConsumeTimeout sets how long a delivered message may stay uncommitted
// before it is rolled back as failed (a crashed or stuck consumer). Default
// 30s; at least 1s, at most MaxConsumeTimeout; rounded up to whole seconds.
// An entry is reclaimed between timeout and timeout+2s after its delivery.
func WithConsumeTimeout(d time.Duration) Option {
	return func(c *config) {
		if d < time.Second {
			c.fail("consume timeout %v is below 1s", d)
			return
		}
		if d > MaxConsumeTimeout {
			c.fail("consume timeout %v is above %v", d, MaxConsumeTimeout)
			return
		}
		c.consumeTimeout = ((d + time.Second - 1) / time.Second) * time.Second
	}
}

// WithRetryBackoff sets the wait before each retry of a failed message.
// Default DefaultBackoff. The slot keeps serving other messages meanwhile.
func WithRetryBackoff(f BackoffFunc) Option {
	return func(c *config) {
		if f == nil {
			c.fail("nil retry backoff")
			return
		}
		c.backoff = f
	}
}

// WithLogger sets the structured logger. Default: silent.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.fail("nil logger")
			return
		}
		c.logger = l
	}
}

// WithCoordinator sets who assigns slots to this process's threads. Default:
// the Redis coordinator (coordinator.NewRedis on the client's Redis), which
// spreads the slots over every process of the namespace. coordinator.NewLocal
// gives every slot to this process alone; zookeeper.New of package
// github.com/rmq-go/rmq/coordinator/zookeeper coordinates through ZooKeeper.
func WithCoordinator(co coordinator.Coordinator) Option {
	return func(c *config) {
		if co == nil {
			c.fail("nil coordinator")
			return
		}
		c.coordinator = co
	}
}

// WithBatchSize sets the most messages one pop takes from a slot. Default
// 256, range 1..1000. The consumer takes fewer when listeners are slow, so a
// batch is handled well within the consume timeout. Bigger batches cost Redis
// less per message (about 30% less at 1000 than at 128) but hold its single
// thread longer per call (a few milliseconds at 1000), which other clients
// of the same Redis feel as latency.
func WithBatchSize(n int) Option {
	return func(c *config) {
		if n < 1 || n > 1000 {
			c.fail("batch size %d outside 1..1000", n)
			return
		}
		c.batchSize = n
	}
}

// WithIdlePoll sets how often a consumer thread looks for messages in its
// empty slots when no wake-up arrives, and how long a slot holding only
// messages due later waits at most between looks. Consumers are woken by
// producers through pub/sub and by their own timers for due times they know
// of; the poll only bounds the delay when a wake-up is lost (a publication
// that failed after its message was stored). A thread asks about all its
// empty slots at once: one EXISTS per 300 slots on a single node, one per
// slot on a Cluster, where it therefore asks every 20th poll unless
// WithIdleSweep says otherwise. Default 3s, minus up to 20% jitter; range
// 10ms..1m.
func WithIdlePoll(d time.Duration) Option {
	return func(c *config) {
		if d < 10*time.Millisecond || d > time.Minute {
			c.fail("idle poll %v outside 10ms..1m", d)
			return
		}
		c.idlePoll = d
	}
}

// clusterSweepPolls is how many idle polls apart a Cluster's threads sweep
// their empty slots by default: there each empty slot costs a command per
// sweep, against one per 300 slots on a single node.
const clusterSweepPolls = 20

// WithIdleSweep sets how often a consumer thread asks Redis whether any of
// its empty slots holds a message that no wake-up announced (one whose
// wake-up was lost, as when a producer dies between storing a message and
// publishing its wake-up). The sweep is that safety net and the only Redis
// traffic of empty slots. Default: the idle poll (WithIdlePoll) on a single
// node, which asks with one EXISTS per 300 slots; 20 idle polls (a minute by
// default) on a Cluster, which asks with one EXISTS per slot. Minus up to 20%
// jitter; range 10ms..10m.
func WithIdleSweep(d time.Duration) Option {
	return func(c *config) {
		if d < 10*time.Millisecond || d > 10*time.Minute {
			c.fail("idle sweep %v outside 10ms..10m", d)
			return
		}
		c.idleSweep = d
	}
}

// sweepInterval is how often a thread sweeps its empty slots (WithIdleSweep).
func (c *config) sweepInterval(multiNode bool) time.Duration {
	switch {
	case c.idleSweep > 0:
		return c.idleSweep
	case multiNode:
		return clusterSweepPolls * c.idlePoll
	}
	return c.idlePoll
}

// WithMaxContentSize sets the largest content a producer accepts, in bytes.
// Default 1 MiB.
func WithMaxContentSize(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("max content size %d is not positive", n)
			return
		}
		c.maxContent = n
	}
}

// WithSendStream sets whether Send writes through full-duplex connections of
// the client's own (default on): one on a single-node client
// (*redis.Client, Sentinel's included), one per master on a Cluster client,
// dialled with the go-redis client's options and retried as it retries its
// commands; or through the go-redis client's pipelines. The streams'
// commands bypass go-redis hooks (tracing, metrics); turn them off to keep
// them. Ring clients, and clients with an OnConnect hook, streaming
// credentials or a rate limiter, always use the pipelines; SendBatch and
// every other call always go through the go-redis client. See the README's
// Sending section.
func WithSendStream(on bool) Option {
	return func(c *config) { c.sendStream = on }
}

// WithReplicaAck makes Send and SendBatch return only once Redis has copied
// the write to at least replicas replicas, waiting at most timeout (Redis's
// WAIT, sent right after the write on the connection that carried it, on the
// send stream too). A write not confirmed in time fails with
// ErrNotReplicated, wrapping what Redis said: the message is stored on the
// master but may be lost if the master dies before its replicas have it. With
// it, an acknowledged Send survives a failover to a replica that
// acknowledged it. Default: no wait (a Send returns once the master stored
// the message). replicas at least 1; timeout 1ms..1m, and with 200 ms to spare
// below the go-redis client's ReadTimeout (New checks it) so that the wait
// is not taken for a silent server.
// A server with nothing else to do notices that a WAIT timed out at its next
// periodic wake-up (10 a second by default, the hz setting), so a wait that
// finds too few replicas may take up to about 100 ms past timeout (measured on
// Redis 7.0: a 100 ms timeout took up to 200 ms).
// See the README's Failover section for its cost.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(c *config) {
		if replicas < 1 {
			c.fail("replica ack of %d replicas is below 1", replicas)
			return
		}
		if timeout < time.Millisecond || timeout > time.Minute {
			c.fail("replica ack timeout %v outside 1ms..1m", timeout)
			return
		}
		c.replicaAck = rdb.ReplicaAck{Replicas: replicas, Timeout: timeout}
	}
}

// replicaAckSlack is how much later than its timeout a WAIT may answer (a
// server with nothing else to do notices at its next periodic wake-up).
const replicaAckSlack = 200 * time.Millisecond

// checkReplicaAck refuses a replica ack whose wait, with its slack, the
// client's ReadTimeout would cut: the WAIT would read as a silent server.
func checkReplicaAck(client redis.UniversalClient, ack rdb.ReplicaAck) error {
	if ack.Replicas == 0 {
		return nil
	}
	var read time.Duration
	switch c := client.(type) {
	case *redis.Client:
		read = c.Options().ReadTimeout
	case *redis.ClusterClient:
		read = c.Options().ReadTimeout
	case *redis.Ring:
		read = c.Options().ReadTimeout
	}
	if read > 0 && ack.Timeout+replicaAckSlack > read {
		return fmt.Errorf("%w: replica ack timeout %v needs %v to spare below the Redis client's ReadTimeout %v",
			ErrInvalidOption, ack.Timeout, replicaAckSlack, read)
	}
	return nil
}
