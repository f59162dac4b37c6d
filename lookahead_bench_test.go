package rmq

import (
	"fmt"
	"testing"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// BenchmarkHoldPop measures keeping a 256-message pop that reached ahead
// (WithLookahead) in due order, behind 64 messages still held from an
// earlier pop: what a pop adds per message on the client.
func BenchmarkHoldPop(b *testing.B) {
	const nowMs = 1795300000000
	res := rdb.CycleResult{NowUs: nowMs * 1000, NowMs: nowMs}
	for i := range 256 {
		res.Deliveries = append(res.Deliveries, rdb.Delivery{Member: fmt.Appendf(nil, "%064d", i),
			RetriesLeft: rdb.MaxRetries, DueMs: nowMs + int64(i)*4})
	}
	t := &thread{}
	s := &slotState{}
	sent := time.Now()
	recv := sent.Add(200 * time.Microsecond)
	earlier := make([]heldMsg, 64)
	for i := range earlier {
		earlier[i] = heldMsg{at: recv.Add(time.Duration(i) * 3 * time.Millisecond)}
	}
	b.ReportAllocs()
	for b.Loop() {
		s.held = append(s.held[:0], earlier...)
		t.hold(s, res, sent, recv)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/msg")
}
