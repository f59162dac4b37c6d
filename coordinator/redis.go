package coordinator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/rdb"
)

// ErrInvalidRedisConfig is returned by the Redis coordinator's Run for a bad
// configuration.
var ErrInvalidRedisConfig = errors.New("rmq: invalid redis coordinator config")

// RedisConfig configures the Redis coordinator. The zero value is the
// default.
type RedisConfig struct {
	// LeaseTTL is how long a worker's membership, and with it its slots,
	// outlives its last heartbeat, by the Redis server's clock. A worker
	// renews it every fifth of LeaseTTL; one that cannot reach Redis stops
	// consuming before LeaseTTL is over (Owned turns false), and a crashed or
	// frozen worker's slots move about LeaseTTL after its last heartbeat.
	// Default 10s; range 500ms..5m.
	LeaseTTL time.Duration
	// WorkerID names this process among the workers. Each Run registers as
	// "<WorkerID>.<random>.<n>": 12 random hex digits drawn for the Run, so
	// that Runs sharing a WorkerID (a restarted process whose predecessor
	// still runs, two clients sharing one Redis coordinator) are distinct
	// members, and n counting its joins (a rejoin after the membership
	// expired is a new member). Default "<host>-<pid>-<random>".
	WorkerID string
	// Logger receives the coordinator's logs. Default: silent.
	Logger *slog.Logger
}

// Redis is the coordinator that needs nothing but the Redis holding the
// messages, and the default of rmq.New. Workers register with a heartbeat
// judged by the Redis clock; one of them leads (a lease in Redis) and
// computes the assignment with AssignAvoiding; each worker claims its slots by
// writing the slot's owner record, which lives in the slot's hash tag beside
// its messages and which every pop and settle checks atomically. A slot is
// claimed only once its previous owner released it (having stopped and
// settled) or its membership expired. See the README for the protocol and
// its timeouts.
type Redis struct {
	client redis.UniversalClient
	cfg    RedisConfig
	log    *slog.Logger
}

var _ Coordinator = (*Redis)(nil)

// NewRedis returns the Redis coordinator on client, which may be a single
// node, Sentinel or Cluster client; usually the one the rmq client uses. The
// configuration is checked when it runs.
func NewRedis(client redis.UniversalClient, cfg RedisConfig) *Redis {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Redis{client: client, cfg: cfg, log: log}
}

// Kind implements Kinded: "redis".
func (r *Redis) Kind() string { return "redis" }

// HonoursDeclines implements DeclineHonourer: the leader's assignment moves
// a slot a worker declines to a worker that does not, once the decline has
// stood for two seconds (declinebook.Grace).
func (r *Redis) HonoursDeclines() bool { return true }

// Check validates the configuration (Run does too).
func (r *Redis) Check() error {
	if r.client == nil {
		return fmt.Errorf("%w: nil redis client", ErrInvalidRedisConfig)
	}
	if ttl := r.cfg.LeaseTTL; ttl != 0 && (ttl < 500*time.Millisecond || ttl > 5*time.Minute) {
		return fmt.Errorf("%w: lease TTL %v outside 500ms..5m", ErrInvalidRedisConfig, ttl)
	}
	if id := r.cfg.WorkerID; id != "" {
		if err := checkWorkerID(id); err != nil {
			return fmt.Errorf("%w: worker id %q: %v", ErrInvalidRedisConfig, id, err)
		}
	}
	return nil
}

// Run implements Coordinator.
func (r *Redis) Run(ctx context.Context, m Member, h Handler) error {
	if err := r.Check(); err != nil {
		return err
	}
	cfg := r.cfg
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 10 * time.Second
	}
	if cfg.WorkerID == "" {
		host, _ := os.Hostname()
		cfg.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomSuffix())
	}
	co := rdb.NewCoordination(r.client, rdb.NewKeyspace(m.Namespace))
	return newRedisRun(co, cfg, r.log, m, h).run(ctx)
}

// checkWorkerID accepts what a worker id may hold: 1..100 bytes of
// [A-Za-z0-9._-] (it appears in Redis values split on ':' and '/').
func checkWorkerID(id string) error {
	if id == "" || len(id) > 100 {
		return fmt.Errorf("length %d outside 1..100", len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("character %q at %d is not one of [A-Za-z0-9._-]", c, i)
		}
	}
	return nil
}

// randomSuffix returns 12 random hex digits: two live Runs sharing a
// WorkerID draw the same once in about 2^48.
func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
