package rmqprom_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// realCluster returns a client of the real Cluster, or fails/skips.
func realCluster(t *testing.T) *redis.ClusterClient {
	t.Helper()
	addrs := os.Getenv("RMQ_CLUSTER_ADDRS")
	if addrs == "" || testing.Short() {
		if serversRequired() {
			t.Fatal("RMQ_CLUSTER_ADDRS is not set, and servers are required")
		}
		t.Skip("RMQ_CLUSTER_ADDRS not set")
	}
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	t.Cleanup(func() { r.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, r.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() }))
	return r
}

// clusterNamespace returns a fresh namespace whose keys are deleted
// from every master when t ends.
func clusterNamespace(t *testing.T, r *redis.ClusterClient) string {
	ns := fmt.Sprintf("rvprom-%d", time.Now().UnixNano())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = r.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			deleteNamespace(m, ns)
			return nil
		})
	})
	return ns
}

// On a Cluster, the backlog gauges count what was sent across every
// master's slots: store, prepare (in flight) and dead; and the metrics lint.
func TestClusterBacklogGauges(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	r := realCluster(t)
	ctx := context.Background()
	c, err := rmq.New(r, rmq.WithNamespace(clusterNamespace(t, r)), rmq.WithRetryBackoff(rmq.NoBackoff))
	require.NoError(t, err)
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "held", SlotAmount: 16, Type: rmq.Priority}))
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "idle", SlotAmount: 64, Type: rmq.RangeMerge}))
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	require.NoError(t, c.Subscribe("held", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		if string(m.Content) == "bad" {
			return fmt.Errorf("always fails")
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}), rmq.WithThreads(1)))
	var msgs []rmq.OutgoingMessage
	for i := range 200 {
		msgs = append(msgs, rmq.RangeMergeMessage{Topic: "idle", Content: fmt.Appendf(nil, "m%d", i), TimeRange: time.Millisecond})
	}
	require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "held", Content: []byte("bad"), Priority: 100}))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		once.Do(func() { close(release) })
		require.NoError(t, c.Close(context.Background()))
		require.NoError(t, <-done)
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c))
	require.Eventually(t, func() bool {
		return gather(t, reg)[`rmq_dead_total{topic="held"}`] == 1
	}, 20*time.Second, 50*time.Millisecond)
	for i := range 5 {
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "held", Content: fmt.Appendf(nil, "h%d", i), Priority: 20}))
	}
	var s map[string]float64
	require.Eventually(t, func() bool {
		s = gather(t, reg)
		return s[`rmq_backlog_messages{state="prepare",topic="held"}`] >= 1
	}, 20*time.Second, 100*time.Millisecond)
	time.Sleep(1100 * time.Millisecond)
	s = gather(t, reg)
	assert.Equal(t, 200.0, s[`rmq_backlog_messages{state="store",topic="idle"}`])
	assert.Greater(t, s[`rmq_oldest_due_age_seconds{topic="idle"}`], 1.0)
	assert.Equal(t, 1.0, s[`rmq_backlog_messages{state="dead",topic="held"}`])
	assert.Equal(t, 5.0, s[`rmq_backlog_messages{state="store",topic="held"}`]+s[`rmq_backlog_messages{state="prepare",topic="held"}`])
	assert.Equal(t, 200.0, s[`rmq_messages_sent_total{topic="idle"}`])
	problems, err := testutil.CollectAndLint(rmqprom.NewCollector(c))
	require.NoError(t, err)
	assert.Empty(t, problems)
}
