package rmq

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// BenchmarkSendBatch measures SendBatch from one goroutine, b.N calls of
// size messages each, against the real Redis of RMQ_REDIS_ADDR (miniredis
// otherwise); ns/op is per call, msgs/s the rate.
func BenchmarkSendBatch(b *testing.B) {
	for _, size := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) { benchmarkSendBatch(b, size) })
	}
}

func benchmarkSendBatch(b *testing.B, size int) {
	var r redis.UniversalClient
	if addr := os.Getenv("RMQ_REDIS_ADDR"); addr != "" {
		r = redis.NewClient(&redis.Options{Addr: addr})
	} else {
		r = redis.NewClient(&redis.Options{Addr: miniredis.RunT(b).Addr()})
	}
	defer r.Close()
	ns := fmt.Sprintf("benchbatch%d", time.Now().UnixNano())
	c, err := New(r, WithNamespace(ns))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	defer c.Close(ctx)
	if err := c.DefineTopic(ctx, Topic{Name: "t", SlotAmount: 64, Type: Priority}); err != nil {
		b.Fatal(err)
	}
	msgs := make([]OutgoingMessage, size)
	seq := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range msgs {
			seq++
			msgs[i] = PriorityMessage{Topic: "t", Content: fmt.Appendf(nil, "%064d", seq), Priority: 100}
		}
		if err := c.Producer().SendBatch(ctx, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(seq)/b.Elapsed().Seconds(), "msgs/s")
	r.Del(ctx, ns+":topics")
	for _, k := range c.topics.get("t").slots {
		r.Del(ctx, k.Store)
	}
}
