package churn_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/rdb"
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
	// churnDataCut is how long a worker is cut off from one data master:
	// longer than the decline takes (about 6 s: churnDeclineGoal), so that
	// the others are seen serving its slots there before the heal.
	churnDataCut = 12 * time.Second
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
// (fencing tokens) refuse any pop that comes later. A fourth way cuts it off
// from one Cluster master that is not the coordinator's, for churnDataCut:
// its leases hold, and it declines that master's slots, which the others
// must be seen serving before the heal (testChurnDataPartition). Every
// message is processed, and no two owned calls of one slot overlap.
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
	t.Run("cluster-data", func(t *testing.T) {
		t.Parallel()
		testChurnDataPartition(t)
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

// testChurnDataPartition runs four workers on the Cluster, w4 reaching one
// master that is not the coordinator's through a proxy, and cuts w4 off
// from it alone for churnDataCut while a call on one of that master's slots
// is in hand. w4 keeps its heartbeats and its slots on the other masters; it
// declines the cut master's slots, which the others take over (w4 taking
// others' in their place) while the cut lasts.
func testChurnDataPartition(t *testing.T) {
	r := newChurnRun(t, redisKind, clusterRedis)
	r.lookahead = churnLookahead
	r.env = map[string][]string{}
	cc := r.b.Redis.(*redis.ClusterClient)
	masterOf := func(key string) string { return testenv.MasterOf(t, cc, key) }
	coord := masterOf("{" + r.ns + "}")
	bySlot := make([]string, churnSlots)
	count := map[string]int{}
	for i := range churnSlots {
		bySlot[i] = masterOf(rdb.NewKeyspace(r.ns).Slot(churnTopic, i).Store)
		count[bySlot[i]]++
	}
	cut := ""
	for node, n := range count {
		if node != coord && (cut == "" || n > count[cut] || n == count[cut] && node < cut) {
			cut = node
		}
	}
	if cut == "" {
		t.Fatalf("every slot of the topic is on the coordinator's master %s", coord)
	}
	behind := map[int]bool{}
	for i, node := range bySlot {
		if node == cut {
			behind[i] = true
		}
	}
	p := testenv.StartPartition(t, cut)
	r.env["w4"] = []string{churnViaEnv + "=" + cut + "=" + p.Addr()}
	r.startFeed()
	r.begin("w1", "w2", "w3", "w4")
	r.partitionData("w4", p, behind, churnDataCut, 3*time.Second)
	r.finish()
}

// partitionData cuts worker id off, through p, from the master of the
// slots in behind while one of its calls on such a slot runs, heals it
// after cut, and waits pause. Every worker stays live; the cut settles once
// id is assigned none of those slots, which must happen before the heal.
func (r *churnRun) partitionData(id string, p *testenv.Partition, behind map[int]bool, cut, pause time.Duration) {
	w := r.worker(id)
	note := r.midCallOn(w, "partition"+churnSlowOnce, churnSlowSleep, func(slot int) bool { return behind[slot] })
	at := time.Now()
	p.Cut()
	ev := r.event(at, fmt.Sprintf("partition %s (cut off from the master of %d slots for %v)", id, len(behind), cut), r.live(), cut,
		withNote(note), func(e *churnEvent) { e.avoid, e.avoided = id, behind })
	if ev.viewSettled == 0 {
		r.t.Errorf("%s was still assigned slots of the master cut off from it when the cut healed, %v after it", id, cut)
	}
	at = time.Now()
	p.Heal()
	r.event(at, fmt.Sprintf("heal %s (after %v)", id, cut), r.live(), pause)
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
