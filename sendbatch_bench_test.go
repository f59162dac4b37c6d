package rmq

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkSendBatch measures SendBatch from one goroutine, b.N calls of
// size messages each, against the real Redis of RMQ_REDIS_ADDR (miniredis
// otherwise); ns/op is per call, msgs/s the rate. The "cancelable" ones
// send with a ctx that can end, which makes SendBatch copy the contents.
func BenchmarkSendBatch(b *testing.B) {
	for _, size := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) { benchmarkSendBatch(b, context.Background(), size) })
	}
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("cancelable/size=%d", size), func(b *testing.B) { benchmarkSendBatch(b, benchCancelable(b), size) })
	}
}

func benchmarkSendBatch(b *testing.B, ctx context.Context, size int) {
	r := benchRedis(b, 0)
	defer r.Close()
	c, done := benchTopic(b, r)
	defer done()
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
}
