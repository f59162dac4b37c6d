package rmqprom_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// A topic another process deleted and defined again with more slots is
// counted over its new slots: rmq_backlog_messages is the whole namespace as
// Redis holds it. (The client's cached definition, with the old slots, was
// read for as long as the process lived.)
func TestBacklogOfATopicDefinedAgainElsewhere(t *testing.T) {
	r := realRedis(t)
	ctx := context.Background()
	ns := namespace(t, r)
	c, err := rmq.New(r, rmq.WithNamespace(ns))
	require.NoError(t, err)
	defer c.Close(context.Background())
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: 2, Type: rmq.RangeMerge}))
	reg := prometheus.NewRegistry()
	reg.MustRegister(rmqprom.NewCollector(c))
	require.Equal(t, 0.0, gather(t, reg)[`rmq_backlog_messages{state="store",topic="t"}`])

	other, err := rmq.New(r, rmq.WithNamespace(ns))
	require.NoError(t, err)
	defer other.Close(context.Background())
	require.NoError(t, other.DeleteTopic(ctx, "t"))
	require.NoError(t, other.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: 8, Type: rmq.RangeMerge}))
	for i := range 40 {
		require.NoError(t, other.Producer().Send(ctx, rmq.RangeMergeMessage{Topic: "t", Content: fmt.Appendf(nil, "m%d", i), TimeRange: time.Hour}))
	}
	truth, err := other.Stats(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, int64(40), truth.Store)

	time.Sleep(1200 * time.Millisecond) // past the collector's and the backlog's caches
	got := gather(t, reg)[`rmq_backlog_messages{state="store",topic="t"}`]
	t.Logf("Redis holds %d messages in store over 8 slots; the collector reports %v", truth.Store, got)
	assert.Equal(t, float64(truth.Store), got)
}
