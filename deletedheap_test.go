package rmq_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A client that defines, sends to and deletes topics of new names (one per
// job or tenant) keeps little of each: the metrics of every topic it
// deleted stayed in its heap in full (about 8 KB each, their eight shards'
// histograms), though TopicMetrics no longer listed them. It keeps a compact
// copy of their figures now, for a topic defined again under the name
// (TestRetiredMetricsKeepEveryFigure; rmqprom's
// TestSentCounterSurvivesTopicRedefinition). Not parallel: it reads the
// process's heap.
func TestDeletedTopicsLeaveLittleHeap(t *testing.T) {
	b := testenv.Single(t)
	c := newClientIn(t, b, testenv.Namespace(t, b))
	ctx := context.Background()
	cycle := func(i int) {
		name := fmt.Sprintf("job-%06d", i)
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: name, SlotAmount: 2, Type: rmq.Priority}))
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: name, Content: []byte("x"), Priority: 20}))
		require.NoError(t, c.DeleteTopic(ctx, name, rmq.Force()))
	}
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	for i := range 50 {
		cycle(i)
	}
	before := heap()
	const n = 400
	for i := range n {
		cycle(50 + i)
	}
	after := heap()
	t.Logf("heap %d → %d bytes over %d topics defined and deleted: %+d per topic", before, after, n, (after-before)/n)
	require.Empty(t, c.TopicMetrics())
	require.Less(t, (after-before)/n, int64(1024), "each deleted topic's metrics stay in the client's heap in full")
}
