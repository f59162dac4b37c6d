package rmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// NamespaceMetrics counts what was sent after a topic was deleted and defined
// again in the same client: the flusher forgets what it sent of the deleted
// topic (it flushed new minus old: negative counters).
func TestSharedMetricsOfATopicDefinedAgain(t *testing.T) {
	t.Parallel() // waits for flushes, reads nothing process-wide
	b := testenv.Single(t)
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "mt", 1, rmq.Priority)
	p := c.Producer()
	for i := range 5 {
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "mt", Content: fmt.Appendf(nil, "a%d", i), Priority: 20}))
	}
	eventually(t, 8*time.Second, "5 sends shared", func() bool {
		m, _, err := c.NamespaceMetrics(ctx, "mt", 1)
		return err == nil && m.Sent == 5
	})
	require.NoError(t, c.DeleteTopic(ctx, "mt", rmq.Force()))
	define(t, c, "mt", 1, rmq.Priority)
	for i := range 2 {
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "mt", Content: fmt.Appendf(nil, "b%d", i), Priority: 20}))
	}
	var sent int64
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		m, _, err := c.NamespaceMetrics(ctx, "mt", 1)
		require.NoError(t, err)
		if sent = m.Sent; sent != 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	assert.Equal(t, int64(2), sent, "shared Sent of the redefined topic; its own TopicMetrics say %d", topicMetrics(c, "mt").Sent)
}
