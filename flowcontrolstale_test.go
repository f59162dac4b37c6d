package rmq_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A client that still knows a topic another deleted cannot pause it or
// limit it: the flow control would outlive the topic, and a topic defined
// again under its name would start paused.
func TestFlowControlOfADeletedTopicIsRefused(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		stale := newClient(t, b)
		define(t, stale, "gone", 4, rmq.Priority)
		other := newClientIn(t, b, stale.Namespace())
		require.NoError(t, other.DeleteTopic(ctx, "gone"))

		require.ErrorIs(t, stale.PauseTopic(ctx, "gone"), rmq.ErrUnknownTopic)
		require.ErrorIs(t, stale.SetRateLimit(ctx, "gone", rmq.RateLimit{PerSecond: 5, Burst: 1}), rmq.ErrUnknownTopic)
		define(t, other, "gone", 4, rmq.Priority)
		fc, err := other.FlowControls(ctx)
		require.NoError(t, err)
		assert.Empty(t, fc, "the topic defined again starts with the deleted one's flow control")
	})
}
