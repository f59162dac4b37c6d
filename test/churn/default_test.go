package churn_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/childproc"
)

// TestChurnDefaultOptions runs worker processes with the default options
// (rmq.New(rdb) in one namespace, as every replica of a service would): they
// share the slots and never run two owned calls of one slot at once, across
// a join and a graceful stop; and a process of the local coordinator, started
// beside them, is refused with ErrNamespaceBusy.
func TestChurnDefaultOptions(t *testing.T) {
	t.Parallel()
	r := newChurnRun(t, defaultKind, singleRedis)
	r.startFeed()
	r.begin("w1", "w2")
	r.join("w3", 3*time.Second)
	r.refusedLocal("l1")
	r.stop("w2", 4*time.Second)
	r.finish()
}

// defaultKind is the coordinator of rmq.New's default options: the Redis
// coordinator with its default lease.
var defaultKind = coordinatorKind{
	name:     "default",
	graceful: time.Second, inHand: churnSlowSleep, crashMargin: 10*time.Second - churnSession + time.Second,
	worker: func(*testing.T, string, *slog.Logger, redis.UniversalClient) (coordinator.Coordinator, error) {
		return nil, nil
	},
	observer: func(t *testing.T, client redis.UniversalClient) (observer, error) {
		return &byPIDObserver{redisObserver: redisObserver{client}}, nil
	},
}

// byPIDObserver reads the Redis coordinator of workers whose ids the
// coordinator made up (default options): it names them by their process.
type byPIDObserver struct {
	redisObserver
	names func(pid int) string // the run's worker id of a process
}

func (o *byPIDObserver) nameByPID(names func(pid int) string) { o.names = names }

// rename returns the run's worker id for every Redis coordinator worker id.
func (o *byPIDObserver) rename(ctx context.Context, ns string) (map[string]string, error) {
	ms, err := coordinator.RedisMembers(ctx, o.client, ns)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		out[process(m.ID)] = o.names(m.PID)
	}
	return out, nil
}

func (o *byPIDObserver) slots(ctx context.Context, ns, topic string) ([]slotView, error) {
	names, err := o.rename(ctx, ns)
	if err != nil {
		return nil, err
	}
	slots, err := o.redisObserver.slots(ctx, ns, topic)
	for i := range slots {
		slots[i].Assigned.Worker = names[slots[i].Assigned.Worker]
		slots[i].Holder.Worker = names[slots[i].Holder.Worker]
	}
	return slots, err
}

func (o *byPIDObserver) workers(ctx context.Context, ns string) ([]string, error) {
	names, err := o.rename(ctx, ns)
	var ids []string
	for _, n := range names {
		ids = append(ids, n)
	}
	return ids, err
}

// localKind builds the local coordinator; its processes share a namespace
// with nobody.
var localKind = coordinatorKind{
	name: "local",
	worker: func(*testing.T, string, *slog.Logger, redis.UniversalClient) (coordinator.Coordinator, error) {
		return coordinator.NewLocal(), nil
	},
}

// churnBusyMark is what a worker process logs when Start refused it.
const churnBusyMark = "namespace busy"

// refusedLocal starts a worker process of the local coordinator in the
// run's namespace and checks that its Start is refused: it exits by itself,
// cleanly, saying so, having consumed nothing.
func (r *churnRun) refusedLocal(id string) {
	r.t.Helper()
	at := time.Now()
	p := childproc.Start(r.t, "worker "+id, "TestChurnWorkerProcess", filepath.Join(r.dir, id+".stderr"),
		churnWorkerEnv+"="+id,
		churnCoordEnv+"="+localKind.name,
		churnRedisEnv+"="+string(r.deployment),
		churnNSEnv+"="+r.ns,
		churnLogEnv+"="+filepath.Join(r.dir, id+".jsonl"),
		churnThreadsEnv+"=1",
	)
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		r.t.Fatalf("the local worker %s was not refused within 30s", id)
	}
	if err := p.Err(); err != nil || !strings.Contains(p.Output(), churnBusyMark) {
		r.t.Errorf("the local worker %s was not refused: %v\n%s", id, err, p.Output())
	}
	r.t.Logf("%7.3fs  local worker %s refused after %v", r.since(at.UnixNano()), id, time.Since(at).Round(time.Millisecond))
}
