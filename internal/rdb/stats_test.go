package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A batch of metrics sent again after its reply was lost is added once; the
// client's next batch is added, and so is another client's batch with the
// same number.
func TestAddStatsAddsABatchOnce(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		minute := time.Now().Unix() / 60
		batch := func(client string, seq int64, sent int64) StatsBatch {
			return StatsBatch{Client: client, Seq: seq, Deltas: []StatsDelta{
				{Topic: "a", Minute: minute, Fields: map[string]int64{"sent": sent, "failed": 1}},
				{Topic: "b", Minute: minute, Fields: map[string]int64{"sent": 2 * sent}},
			}}
		}
		steps := []struct {
			batch StatsBatch
			added bool
		}{
			{batch("x", 1, 10), true},
			{batch("x", 1, 10), false}, // the same batch again
			{batch("x", 2, 5), true},
			{batch("x", 2, 5), false},
			{batch("y", 2, 100), true}, // another client
		}
		for i, s := range steps {
			added, err := f.br.AddStats(f.ctx, s.batch)
			require.NoError(t, err)
			assert.Equal(t, s.added, added, "step %d", i)
		}
		for _, want := range []struct {
			topic        string
			sent, failed int64
		}{{"a", 115, 3}, {"b", 230, 0}} {
			total, minutes, err := f.br.Stats(f.ctx, want.topic, minute, minute)
			require.NoError(t, err)
			assert.Equal(t, want.sent, total["sent"], want.topic)
			assert.Equal(t, want.failed, total["failed"], want.topic)
			require.Len(t, minutes, 1)
			assert.Equal(t, want.sent, minutes[0]["sent"], want.topic)
			ttl, err := b.Redis.PTTL(f.ctx, f.br.(*redisBroker).keys.StatsMinute(want.topic, minute)).Result()
			require.NoError(t, err)
			assert.InDelta(t, statsMinuteTTL.Seconds(), ttl.Seconds(), 60, "the minute's hash expires")
		}
		ttl, err := b.Redis.PTTL(f.ctx, f.br.(*redisBroker).keys.StatsMark("x")).Result()
		require.NoError(t, err)
		assert.InDelta(t, statsMinuteTTL.Seconds(), ttl.Seconds(), 60, "the mark expires")
	})
}
