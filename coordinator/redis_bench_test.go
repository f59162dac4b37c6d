package coordinator

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// BenchmarkIdleCoordinatorCost measures the Redis traffic of one worker of
// the Redis coordinator that owns 1, 1,000 or 10,000 idle slots (no consumer
// threads: the coordinator's own commands only), on the real Redis of
// RMQ_REDIS_ADDR, over RMQ_IDLE_SECONDS (default 10) after every slot is
// held. It reports commands per second as the server counts them
// (total_commands_processed) and counting the commands scripts run
// (commandstats). Run it on an otherwise idle server:
//
//	go test -run X -bench IdleCoordinatorCost -benchtime 1x ./coordinator/
func BenchmarkIdleCoordinatorCost(b *testing.B) {
	if os.Getenv("RMQ_REDIS_ADDR") == "" {
		b.Skip("RMQ_REDIS_ADDR not set")
	}
	seconds := 10
	if s, err := strconv.Atoi(os.Getenv("RMQ_IDLE_SECONDS")); err == nil && s > 0 {
		seconds = s
	}
	for _, slots := range []int{1, 1000, 10000} {
		b.Run(fmt.Sprintf("slots=%d", slots), func(b *testing.B) {
			be := testenv.Single(b)
			ns := testenv.Namespace(b, be)
			board := newSlotBoard()
			m := Member{Namespace: ns, DrainTimeout: 5 * time.Second,
				Topics: []TopicThreads{{Topic: testTopic, SlotAmount: slots, Threads: 1}}}
			run := newRedisRun(rdb.NewCoordination(be.Redis, rdb.NewKeyspace(ns)),
				RedisConfig{LeaseTTL: 10 * time.Second, WorkerID: "idle"},
				slog.New(slog.NewTextHandler(io.Discard, nil)), m,
				&testThreads{worker: "idle", board: board, noCheck: true})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- run.run(ctx) }()
			defer func() { cancel(); <-done }()
			start := time.Now()
			for board.count("idle") < slots {
				if time.Since(start) > time.Minute {
					b.Fatalf("only %d of %d slots held", board.count("idle"), slots)
				}
				time.Sleep(5 * time.Millisecond)
			}
			b.ReportMetric(time.Since(start).Seconds()*1000, "ms-to-hold-all")
			time.Sleep(time.Second) // let the claims' announcements settle
			c0, s0 := serverCommands(b, be.Redis)
			time.Sleep(time.Duration(seconds) * time.Second)
			c1, s1 := serverCommands(b, be.Redis)
			b.ReportMetric(float64(c1-c0)/float64(seconds), "cmds/s")
			b.ReportMetric(float64(s1-s0)/float64(seconds), "cmds-incl-scripts/s")
		})
	}
}

// serverCommands returns the server's total_commands_processed and the sum of
// its commandstats calls (which counts commands run inside scripts too).
func serverCommands(b *testing.B, c redis.UniversalClient) (int64, int64) {
	info, err := c.Info(context.Background(), "stats", "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total, withScripts int64
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			total, _ = strconv.ParseInt(v, 10, 64)
		}
		if rest, ok := strings.CutPrefix(line, "cmdstat_"); ok {
			_, stats, _ := strings.Cut(rest, ":")
			for f := range strings.SplitSeq(stats, ",") {
				if v, ok := strings.CutPrefix(f, "calls="); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					withScripts += n
				}
			}
		}
	}
	return total, withScripts
}

// BenchmarkApplyIdle measures one pass of the loop's per-slot work over a
// worker's held slots when nothing changes (the assignment stands, no lease
// was released, none lapsed): what a process holding many idle slots pays
// every fifth of the lease TTL. No Redis call is made on that path.
func BenchmarkApplyIdle(b *testing.B) {
	const topics, slots = 100, 256
	run := newRedisRun(nil, RedisConfig{LeaseTTL: 10 * time.Second, WorkerID: "idle"},
		slog.New(slog.NewTextHandler(io.Discard, nil)), Member{}, nil)
	run.leaseEnd = monoNow() + int64(time.Hour)
	ts := make([]*redisTopic, topics)
	for i := range ts {
		t := &redisTopic{TopicThreads: TopicThreads{Topic: strconv.Itoa(i), SlotAmount: slots, Threads: 1},
			desired: make([]Owner, slots), held: make([]*redisHeld, slots), waiting: make(map[int]waited),
			unsure: make(map[int]time.Time)}
		for s := range slots {
			t.desired[s] = Owner{Worker: "idle"}
			l, g := NewLease(t.Topic, s, 0, 1)
			l.deadline.Store(run.leaseEnd)
			t.held[s] = &redisHeld{slot: s, record: "1:idle", grant: g}
		}
		ts[i] = t
		run.topics[t.Topic] = t
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		for _, t := range ts {
			if err := run.apply(ctx, t, "idle", true); err != nil {
				b.Fatal(err)
			}
		}
		_ = run.nextLook()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(topics*slots), "ns/slot")
}
