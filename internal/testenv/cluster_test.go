package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/keyslot"
)

// TestPrivateCluster starts a private cluster, checks its topology, its
// settings and KeySlot against CLUSTER KEYSLOT, kills a master and sees its replica
// promoted.
func TestPrivateCluster(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	c := StartCluster(t, ClusterOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	masters, err := c.Masters(ctx)
	require.NoError(t, err)
	require.Len(t, masters, 3)
	covered := 0
	for _, m := range masters {
		for _, r := range m.Slots {
			covered += r.Last - r.First + 1
		}
	}
	assert.Equal(t, keyslot.Count, covered, "slots served by the masters %+v", masters)
	assert.Len(t, c.Addrs(), 6)
	coverage, err := c.Setting(ctx, "cluster-require-full-coverage")
	require.NoError(t, err)
	assert.Equal(t, "yes", coverage, "Redis's default unless PartialCoverage")
	timeout, err := c.Setting(ctx, "cluster-node-timeout")
	require.NoError(t, err)
	assert.Equal(t, "2000", timeout)

	rc := redis.NewClient(&redis.Options{Addr: c.Addrs()[0]})
	defer rc.Close()
	for i := range 500 {
		for _, key := range []string{fmt.Sprintf("key-%d", i), fmt.Sprintf("ns-%d:{t:%d}:store", i, i%64), fmt.Sprintf("{ns-%d}", i)} {
			want, err := rc.ClusterKeySlot(ctx, key).Result()
			require.NoError(t, err)
			require.Equal(t, int(want), KeySlot(key), "KeySlot(%q)", key)
		}
	}

	victim := masters[1]
	addr, err := c.MasterOf(ctx, victim.Slots[0].First)
	require.NoError(t, err)
	require.Equal(t, victim.Addr, addr)
	c.Kill(t, victim.Addr)
	killed := time.Now()
	promoted, replica, err := c.WaitPromotion(ctx, victim.Addr)
	require.NoError(t, err)
	assert.NotEqual(t, victim.Addr, replica)
	t.Logf("master %s killed; replica %s promoted %v later", victim.Addr, replica, promoted.Sub(killed).Round(time.Millisecond))
	// The other nodes learn of the promotion by gossip, moments later.
	require.Eventually(t, func() bool {
		addr, err := c.MasterOf(ctx, victim.Slots[0].First)
		return err == nil && addr == replica
	}, 10*time.Second, 20*time.Millisecond, "a live node names %s the master of slot %d", replica, victim.Slots[0].First)
	ms, err := c.Masters(ctx)
	require.NoError(t, err)
	assert.Len(t, ms, 3, "three masters again")
}
