package rdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// publishAt goes through the master of its key, never a node of go-redis's
// choosing: with one master cut off from the process, 30 publications
// through another master's key all return at once (go-redis picks the
// nodes of keyless commands in turn or at random: one of three each time),
// and one through the cut master's key fails at the read timeout.
func TestPublishAtGoesThroughTheKeysMaster(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	masterOf := func(key string) string { return testenv.MasterOf(t, direct, key) }
	keys := NewKeyspace(ns)
	home := keys.Controls()
	var cutKey string
	for i := 0; cutKey == "" && i < 1000; i++ {
		if k := fmt.Sprintf("%s:{c%d}", ns, i); masterOf(k) != masterOf(home) {
			cutKey = k
		}
	}
	require.NotEmpty(t, cutKey)
	cutAddr := masterOf(cutKey)
	c, p := viaPartition(t, cutAddr, 300*time.Millisecond)
	sub := direct.Subscribe(ctx, keys.ControlChannel())
	t.Cleanup(func() { sub.Close() })
	_, err := sub.Receive(ctx)
	require.NoError(t, err)

	p.Cut()
	start := time.Now()
	for i := range 30 {
		require.NoError(t, publishAt(ctx, c, home, keys.ControlChannel(), fmt.Sprint(i)), "publication %d", i)
	}
	assert.Less(t, time.Since(start), time.Second, "a publication waited for the cut master")
	for i := range 30 {
		m, err := sub.ReceiveMessage(ctx)
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint(i), m.Payload)
	}
	assert.Error(t, publishAt(ctx, c, cutKey, keys.ControlChannel(), "cut"), "a publication through the cut master went through")
}
