package rmq

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// BenchmarkSlotIndex measures the slot hash of a 64-byte basis.
func BenchmarkSlotIndex(b *testing.B) {
	basis := []byte(fmt.Sprintf("%064d", 42))
	b.ReportAllocs()
	for b.Loop() {
		_ = SlotIndex(basis, 64)
	}
}

// benchClient returns a client on miniredis with topic "t" (Priority, 64 slots) cached.
func benchClient(b *testing.B) *Client {
	m := miniredis.RunT(b)
	r := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{m.Addr()}})
	b.Cleanup(func() { r.Close() })
	c, err := New(r)
	if err != nil {
		b.Fatal(err)
	}
	if err := c.DefineTopic(context.Background(), Topic{Name: "t", SlotAmount: 64, Type: Priority}); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkEncodeSend measures validating a message and building its store
// entry (everything a Send does before it hands the entry to the broker).
func BenchmarkEncodeSend(b *testing.B) {
	c := benchClient(b)
	msg := PriorityMessage{Topic: "t", Content: []byte(fmt.Sprintf("%064d", 7)), Priority: 100}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.producer.build(ctx, msg, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewMessage measures turning a delivery into a Message.
func BenchmarkNewMessage(b *testing.B) {
	c := benchClient(b)
	t := c.topics.get("t")
	d := &rdb.Delivery{Member: []byte(fmt.Sprintf("%064d", 7)), RetriesLeft: rdb.MaxRetries, Priority: 100}
	b.ReportAllocs()
	for b.Loop() {
		_ = newMessage(t, 3, d, 1795300000123)
	}
}

// BenchmarkSendConcurrent measures Send from 16 goroutines, one message per
// call, against the real Redis of RMQ_REDIS_ADDR (miniredis otherwise):
// through the client's own full-duplex connection, and through go-redis
// pipelines (WithSendStream(false)). The "cancelable" ones send with a ctx
// that can end, as with a deadline, which makes Send copy each content.
func BenchmarkSendConcurrent(b *testing.B) {
	b.Run("stream", func(b *testing.B) { benchmarkSend(b, 16, true) })
	b.Run("pipelines", func(b *testing.B) { benchmarkSend(b, 16, false) })
	b.Run("stream-cancelable", func(b *testing.B) { benchmarkSendCtx(b, benchCancelable(b), 16, true) })
}

// BenchmarkSendSequential is one goroutine sending one message at a time:
// the latency of a lone Send.
func BenchmarkSendSequential(b *testing.B) {
	b.Run("stream", func(b *testing.B) { benchmarkSend(b, 1, true) })
	b.Run("pipelines", func(b *testing.B) { benchmarkSend(b, 1, false) })
}

// BenchmarkSendCluster measures Send from 16 goroutines, one message per
// call, on the Redis Cluster of RMQ_CLUSTER_ADDRS (comma-separated; skipped
// without it): through a send stream per master.
func BenchmarkSendCluster(b *testing.B) {
	addrs := os.Getenv("RMQ_CLUSTER_ADDRS")
	if addrs == "" {
		b.Skip("RMQ_CLUSTER_ADDRS is not set")
	}
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), PoolSize: 64})
	defer r.Close()
	benchmarkSendOn(b, r, 16, true)
}

func benchmarkSend(b *testing.B, senders int, stream bool) {
	benchmarkSendCtx(b, context.Background(), senders, stream)
}

func benchmarkSendCtx(b *testing.B, ctx context.Context, senders int, stream bool) {
	r := benchRedis(b, 64)
	defer r.Close()
	benchmarkSendOnCtx(b, ctx, r, senders, stream)
}

// benchCancelable returns a context that can end (its Done is not nil) and
// does not end before b.
func benchCancelable(b *testing.B) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	return ctx
}

// benchRedis returns a client on the real Redis of RMQ_REDIS_ADDR with a
// pool of poolSize (go-redis's default if 0), or on miniredis without it.
func benchRedis(b *testing.B, poolSize int) redis.UniversalClient {
	if addr := os.Getenv("RMQ_REDIS_ADDR"); addr != "" {
		return redis.NewClient(&redis.Options{Addr: addr, PoolSize: poolSize})
	}
	return redis.NewClient(&redis.Options{Addr: miniredis.RunT(b).Addr()})
}

// benchTopic returns a client on r in a namespace of its own with topic "t"
// (Priority, 64 slots), and a func that closes it and deletes what it stored.
func benchTopic(b *testing.B, r redis.UniversalClient, opts ...Option) (*Client, func()) {
	ns := fmt.Sprintf("bench%d", time.Now().UnixNano())
	c, err := New(r, append([]Option{WithNamespace(ns)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := c.DefineTopic(ctx, Topic{Name: "t", SlotAmount: 64, Type: Priority}); err != nil {
		b.Fatal(err)
	}
	return c, func() {
		c.Close(ctx)
		r.Del(ctx, ns+":topics")
		for _, k := range c.topics.get("t").slots {
			r.Del(ctx, k.Store)
		}
	}
}

func benchmarkSendOn(b *testing.B, r redis.UniversalClient, senders int, stream bool) {
	benchmarkSendOnCtx(b, context.Background(), r, senders, stream)
}

func benchmarkSendOnCtx(b *testing.B, ctx context.Context, r redis.UniversalClient, senders int, stream bool) {
	c, done := benchTopic(b, r, WithSendStream(stream))
	defer done()
	var seq atomic.Int64
	cpu0 := serversCPU(ctx, r)
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	per := b.N/senders + 1
	for range senders {
		wg.Go(func() {
			for range per {
				content := fmt.Appendf(nil, "%064d", seq.Add(1))
				if err := c.Producer().Send(ctx, PriorityMessage{Topic: "t", Content: content, Priority: 100}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if cpu0 >= 0 {
		b.ReportMetric((serversCPU(ctx, r)-cpu0)*1e6/float64(per*senders), "redis-µs/msg")
	}
	n := &c.counters.send
	b.ReportMetric(float64(n.Written.Load())/float64(max(n.Writes.Load(), 1)), "msgs/write")
	b.ReportMetric(float64(per*senders)/b.Elapsed().Seconds(), "msgs/s")
}

// serversCPU returns the CPU seconds every server of r has spent, or -1
// where INFO cannot say (miniredis).
func serversCPU(ctx context.Context, r redis.UniversalClient) float64 {
	cpu, err := testenv.ServersCPU(ctx, r)
	if err != nil {
		return -1
	}
	return cpu
}
