package churn_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/testenv"
)

// Network partitions: one worker process reaches a server through
// testenv.Partition proxies, which cut it off from that server while every
// other process still reaches it. Unlike SIGSTOP, the cut-off worker keeps
// running: its listeners finish their calls, its timers fire, its other
// connections work, and what it sent during the cut reaches the server late,
// when the partition heals.

// How long a worker is cut off: churnBlip is shorter than the lease or
// session (the worker may keep its slots), churnCut longer (the others take
// them, within churnSession plus the kind's crash margin).
const (
	churnBlip = 1500 * time.Millisecond
	churnCut  = 7 * time.Second
)

// TestChurnPartition cuts one of four workers off for churnCut (past the
// lease or session timeout) while one of its listener calls runs, and heals
// it; on the single Redis, a cut of churnBlip comes first. Over the Redis
// coordinator, the worker is cut off from Redis, which holds both its
// messages and its coordinator; on the Cluster, from the master of the
// coordinator's keys alone, while it still reaches the other masters and its
// slots there; over ZooKeeper, from the whole ensemble while it still
// reaches Redis. In the last two, its pops could still reach its slots: its
// leases end locally before the others take them, and the owner records
// (fencing tokens) refuse any pop that comes later. Every message is
// processed, and no two owned calls of one slot overlap.
func TestChurnPartition(t *testing.T) {
	t.Parallel()
	t.Run("redis", func(t *testing.T) {
		t.Parallel()
		testChurnPartitionOn(t, redisKind, singleRedis, "Redis", true, func(r *churnRun) []*testenv.Partition {
			addr := os.Getenv("RMQ_REDIS_ADDR") // singleRedis: the run's backend checked it
			p := testenv.StartPartition(t, addr)
			r.env["w4"] = []string{churnRedisEnv + "=addr:" + p.Addr()}
			return []*testenv.Partition{p}
		})
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		testChurnPartitionOn(t, redisKind, clusterRedis, "the coordinator's master", false, func(r *churnRun) []*testenv.Partition {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			m, err := r.b.Redis.(*redis.ClusterClient).MasterForKey(ctx, "{"+r.ns+"}")
			if err != nil {
				t.Fatalf("the master of the coordinator's keys: %v", err)
			}
			p := testenv.StartPartition(t, m.Options().Addr)
			r.env["w4"] = []string{churnViaEnv + "=" + m.Options().Addr + "=" + p.Addr()}
			return []*testenv.Partition{p}
		})
	})
	t.Run("zookeeper", func(t *testing.T) {
		t.Parallel()
		testChurnPartitionOn(t, zookeeperKind, singleRedis, "ZooKeeper", false, func(r *churnRun) []*testenv.Partition {
			var ps []*testenv.Partition
			var addrs []string
			for _, s := range testenv.ZooKeeper(t) {
				p := testenv.StartPartition(t, s)
				ps, addrs = append(ps, p), append(addrs, p.Addr())
			}
			r.env["w4"] = []string{"RMQ_ZK_SERVERS=" + strings.Join(addrs, ",")}
			return ps
		})
	})
}

// testChurnPartitionOn runs four workers on deployment, w4 through the
// proxies that route makes, and cuts w4 off for churnCut, after a cut of
// churnBlip first if blip is set.
func testChurnPartitionOn(t *testing.T, kind coordinatorKind, deployment churnDeployment, from string, blip bool,
	route func(*churnRun) []*testenv.Partition) {
	r := newChurnRun(t, kind, deployment)
	r.lookahead = churnLookahead
	r.env = map[string][]string{}
	ps := route(r)
	r.startFeed()
	r.begin("w1", "w2", "w3", "w4")
	if blip {
		r.partition("w4", from, ps, churnBlip, false, 2*time.Second)
	}
	r.partition("w4", from, ps, churnCut, true, 3*time.Second)
	r.finish()
}

// partition cuts worker id off from its server (named from) through ps while
// one of its listener calls runs, heals it after cut, and waits pause. A
// long cut (past the lease or session) expects the others to take its slots
// meanwhile; a short one does not. The call in hand at a long cut lasts
// until a second before the heal, past the moment the others take its slot:
// it must end seeing Owned false, or its call and the new owner's overlap.
// Its message is slow on its first delivery only, so that the one that
// follows does not hold the slot's return to the healed worker back.
func (r *churnRun) partition(id, from string, ps []*testenv.Partition, cut time.Duration, long bool, pause time.Duration) {
	w := r.worker(id)
	name, live, call := "blip", r.live(), churnSlowSleep
	if long {
		name, live, call = "partition", r.live(id), cut-time.Second
	}
	note := r.midCall(w, "partition"+churnSlowOnce, call)
	at := time.Now()
	for _, p := range ps {
		p.Cut()
	}
	r.event(at, fmt.Sprintf("%s %s (cut off from %s for %v)", name, id, from, cut), live, cut, withNote(note))
	at = time.Now()
	for _, p := range ps {
		p.Heal()
	}
	r.event(at, fmt.Sprintf("heal %s (after %v)", id, cut), r.live(), pause)
}
