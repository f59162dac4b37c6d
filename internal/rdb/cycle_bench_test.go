package rdb

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/testenv"
)

// BenchmarkCycleDrain measures the two-phase path of one slot on the server
// of RMQ_REDIS_ADDR: a backlog of b.N batches of 1,000 messages is drained,
// each call popping a batch into prepare and committing the previous one, as
// a consumer does. It reports the time per message from the client and, from
// the server's INFO cpu, Redis CPU per message. Sub-benchmarks: priorities
// 17..1016 (as the bench sends them), one priority, four priorities per
// batch (runs of 250), and due times.
func BenchmarkCycleDrain(b *testing.B) {
	const batch = 1000
	for _, kind := range []string{"priorities", "one-priority", "four-priorities", "due-times"} {
		b.Run(kind, func(b *testing.B) {
			be := testenv.Single(b)
			ks := NewKeyspace(testenv.Namespace(b, be))
			br, keys := New(be.Redis, ks), ks.Slot("bench", 0)
			ctx := context.Background()
			due := time.Now().UnixMilli() - int64(b.N*batch) - 60_000 // all due
			for n := 0; n < b.N; n++ {
				zs := make([]redis.Z, batch)
				for i := range zs {
					score := float64(17 + i%1000)
					switch kind {
					case "one-priority":
						score = 500
					case "four-priorities": // batch n's four levels pop first
						score = float64(17 + 4*n + i/250)
					case "due-times":
						score = float64(due + int64(n*batch+i))
					}
					zs[i] = redis.Z{Score: score, Member: fmt.Sprintf("%08d-%055d", n, i)}
				}
				if err := be.Redis.ZAdd(ctx, keys.Store, zs...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			req := CycleRequest{Priority: kind != "due-times", Max: batch, Timeout: 30 * time.Second, Waits: noWaits}
			var last CycleResult
			cpu0 := redisCPU(b, be.Redis)
			b.ResetTimer()
			for range b.N {
				req.Outcomes = settle(last, Commit)
				res, err := br.Cycle(ctx, keys, &req)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Deliveries) != batch {
					b.Fatalf("popped %d, want %d", len(res.Deliveries), batch)
				}
				last = res
			}
			b.StopTimer()
			msgs := float64(b.N * batch)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/msgs, "ns/msg")
			b.ReportMetric((redisCPU(b, be.Redis)-cpu0)*1e6/msgs, "redis-µs/msg")
		})
	}
}

// redisCPU returns the server's used_cpu_user + used_cpu_sys in seconds.
func redisCPU(b *testing.B, c redis.UniversalClient) float64 {
	b.Helper()
	cpu, err := testenv.ServersCPU(context.Background(), c)
	if err != nil {
		b.Fatal(err)
	}
	return cpu
}

// BenchmarkCyclesAtLowRate measures what a cycle call costs the server of
// RMQ_REDIS_ADDR when calls come at a low rate (a pause of 2 ms after each
// round trip, so that Redis sleeps between them), sent alone or four to a
// pipeline (Cycles, as a thread's slots that reach ahead pop together). Each
// call looks at a slot whose 30 messages are due later, as a lookahead pop
// between two due times does. It reports Redis CPU per call.
func BenchmarkCyclesAtLowRate(b *testing.B) {
	for _, group := range []int{1, 4} {
		b.Run(fmt.Sprintf("group=%d", group), func(b *testing.B) {
			be := testenv.Single(b)
			ks := NewKeyspace(testenv.Namespace(b, be))
			br, ctx := New(be.Redis, ks), context.Background()
			slots := ks.Slots("bench", 64)
			later := time.Now().Add(time.Hour).UnixMilli()
			for i, k := range slots {
				zs := make([]redis.Z, 30)
				for j := range zs {
					zs[j] = redis.Z{Score: float64(later + int64(j)), Member: fmt.Sprintf("%02d-%061d", i, j)}
				}
				if err := be.Redis.ZAdd(ctx, k.Store, zs...).Err(); err != nil {
					b.Fatal(err)
				}
			}
			calls := make([]*SlotCycle, group)
			cpu0 := redisCPU(b, be.Redis)
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				for i := range calls {
					calls[i] = &SlotCycle{Keys: slots[(n*group+i)%len(slots)],
						Req: &CycleRequest{Max: 256, Timeout: 30 * time.Second, Waits: noWaits, Ahead: time.Second}}
				}
				br.Cycles(ctx, calls)
				for _, c := range calls {
					if c.Err != nil {
						b.Fatal(c.Err)
					}
				}
				time.Sleep(2 * time.Millisecond)
			}
			b.StopTimer()
			b.ReportMetric((redisCPU(b, be.Redis)-cpu0)*1e6/float64(b.N*group), "redis-µs/call")
		})
	}
}

// BenchmarkCyclesClusterGroup measures a group of four cycle calls on one
// master of the Cluster of RMQ_CLUSTER_ADDRS (Cycles, as a thread's slots
// that reach ahead pop together there), back to back: each call looks at a
// slot whose 30 messages are due later. It reports the time per group.
func BenchmarkCyclesClusterGroup(b *testing.B) {
	be := testenv.Cluster(b)
	cc := be.Redis.(*redis.ClusterClient)
	ks := NewKeyspace(testenv.Namespace(b, be))
	br, ctx := New(be.Redis, ks), context.Background()
	var slots []SlotKeys
	var master string
	later := time.Now().Add(time.Hour).UnixMilli()
	for i := 0; len(slots) < 4; i++ {
		k := ks.Slot("bench", i)
		node, err := cc.MasterForKey(ctx, k.Store)
		if err != nil {
			b.Fatal(err)
		}
		if master == "" {
			master = node.Options().Addr
		}
		if node.Options().Addr != master {
			continue
		}
		zs := make([]redis.Z, 30)
		for j := range zs {
			zs[j] = redis.Z{Score: float64(later + int64(j)), Member: fmt.Sprintf("%02d-%061d", i, j)}
		}
		if err := be.Redis.ZAdd(ctx, k.Store, zs...).Err(); err != nil {
			b.Fatal(err)
		}
		slots = append(slots, k)
	}
	calls := make([]*SlotCycle, len(slots))
	b.ResetTimer()
	for b.Loop() {
		for i, k := range slots {
			calls[i] = &SlotCycle{Keys: k, Req: &CycleRequest{Max: 256, Timeout: 30 * time.Second, Waits: noWaits, Ahead: time.Second}}
		}
		br.Cycles(ctx, calls)
		for _, c := range calls {
			if c.Err != nil {
				b.Fatal(c.Err)
			}
		}
	}
}

// BenchmarkAnyWaitingCluster measures an idle sweep of 1,600 empty slots
// (a thread's share of 100 topics × 256 slots over 16 threads) on the
// Cluster of RMQ_CLUSTER_ADDRS: one EXISTS per slot, one pipeline per
// master. It reports the time per sweep.
func BenchmarkAnyWaitingCluster(b *testing.B) {
	be := testenv.Cluster(b)
	ks := NewKeyspace(testenv.Namespace(b, be))
	br, ctx := New(be.Redis, ks), context.Background()
	var slots []SlotKeys
	for topic := range 7 {
		slots = append(slots, ks.Slots("idle"+strconv.Itoa(topic), 256)...)
	}
	slots = slots[:1600]
	for b.Loop() {
		waiting, err := br.AnyWaiting(ctx, slots)
		if err != nil || waiting {
			b.Fatal(waiting, err)
		}
	}
}
