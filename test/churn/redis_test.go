package churn_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestChurnRedis runs the churn scenarios over the Redis coordinator: on a
// real single Redis of its own with appendfsync always, which is also
// killed and restarted mid-run, and on the real Cluster. In both the workers
// pop ahead (WithLookahead), so that held messages meet every event too; on
// the single Redis a thread's slots pop together (one pipeline of cycle
// calls), so those round trips meet them as well.
func TestChurnRedis(t *testing.T) {
	t.Parallel()
	t.Run("redis-restart", func(t *testing.T) {
		srv := testenv.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
		testChurnWorkersRestarting(t, redisKind, churnDeployment("addr:"+srv.Addr()), srv, churnLookahead)
	})
	t.Run("cluster", func(t *testing.T) { testChurnWorkersRestarting(t, redisKind, clusterRedis, nil, churnLookahead) })
}

// redisKind runs the churn test over the Redis coordinator on the Redis that
// holds the messages.
var redisKind = coordinatorKind{
	name:     "redis",
	graceful: time.Second, inHand: churnSlowSleep, crashMargin: time.Second,
	worker: func(t *testing.T, id string, log *slog.Logger, client redis.UniversalClient) (coordinator.Coordinator, error) {
		return coordinator.NewRedis(client, coordinator.RedisConfig{LeaseTTL: churnSession, WorkerID: id, Logger: log}), nil
	},
	observer: func(t *testing.T, client redis.UniversalClient) (observer, error) {
		return redisObserver{client}, nil
	},
}

// redisObserver reads the Redis coordinator's keys.
type redisObserver struct{ client redis.UniversalClient }

func (o redisObserver) coordinator() coordinator.Coordinator {
	return coordinator.NewRedis(o.client, coordinator.RedisConfig{})
}

// process returns the churn worker id of a Redis coordinator member id
// ("w3.1a2b3c4d5e6f.2": the second join of a Run of worker process w3, whose
// random part is 1a2b3c4d5e6f).
func process(id string) string {
	for range 2 {
		if i := strings.LastIndexByte(id, '.'); i > 0 {
			id = id[:i]
		}
	}
	return id
}

func (o redisObserver) slots(ctx context.Context, ns, topic string) ([]slotView, error) {
	slots, err := coordinator.RedisSlots(ctx, o.client, ns, topic, churnSlots)
	if err != nil {
		return nil, err
	}
	out := make([]slotView, len(slots))
	for i, s := range slots {
		out[i] = slotView{Slot: s.Slot, Assigned: coordinator.Owner{Worker: process(s.Assigned.Worker), Thread: s.Assigned.Thread}}
		if s.Holder != "" {
			// A record names the worker, not the thread: the thread is the
			// assigned one when the holder is the assignee.
			out[i].Holder = coordinator.Owner{Worker: process(s.Holder), Thread: -1}
			if s.Holder == s.Assigned.Worker {
				out[i].Holder.Thread = s.Assigned.Thread
			}
		}
	}
	return out, nil
}

func (o redisObserver) workers(ctx context.Context, ns string) ([]string, error) {
	ms, err := coordinator.RedisMembers(ctx, o.client, ns)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = process(m.ID)
	}
	return ids, nil
}

// churnDeployment names where a run's messages live, in the parent and in
// its worker processes: "redis" (the real Redis of RMQ_REDIS_ADDR),
// "cluster" (the real Cluster of RMQ_CLUSTER_ADDRS), or "addr:HOST:PORT" (a
// private Redis of the run).
type churnDeployment string

const (
	singleRedis  churnDeployment = "redis"
	clusterRedis churnDeployment = "cluster"
)

// backend returns a client of the deployment, closed when t ends.
func (d churnDeployment) backend(t testing.TB) testenv.Backend {
	switch {
	case d == clusterRedis:
		if from, to, ok := strings.Cut(os.Getenv(churnViaEnv), "="); ok {
			return testenv.ClusterVia(t, map[string]string{from: to})
		}
		return testenv.Cluster(t)
	case strings.HasPrefix(string(d), "addr:"):
		c := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(string(d), "addr:")})
		t.Cleanup(func() { c.Close() })
		return testenv.Backend{Name: string(d), Redis: c}
	default:
		return testenv.Single(t)
	}
}

// restartRedis kills the run's private Redis, starts it again after down,
// and waits pause.
func (r *churnRun) restartRedis(srv *testenv.RedisServer, down, pause time.Duration) {
	at := time.Now()
	srv.Kill(r.t)
	r.t.Logf("%7.3fs  redis killed (SIGKILL); restarting in %v", r.since(at.UnixNano()), down)
	time.Sleep(down)
	srv.Restart(r.t)
	r.event(at, "redis restart", r.live(), pause, withNote("down "+down.String()))
}
