package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrivateSentinel starts a private Sentinel deployment, checks its
// topology, kills the master and sees the replica promoted.
func TestPrivateSentinel(t *testing.T) {
	t.Parallel() // a private Sentinel deployment of its own
	s := StartSentinel(t, SentinelOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.Len(t, s.SentinelAddrs(), 3)

	fc := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs()})
	defer fc.Close()
	require.NoError(t, fc.Set(ctx, "k", "v", 0).Err())
	master := redis.NewClient(&redis.Options{Addr: s.MasterAddr()})
	defer master.Close()
	assert.Equal(t, "v", master.Get(ctx, "k").Val(), "the failover client writes to the master")
	role, err := master.Do(ctx, "ROLE").Slice()
	require.NoError(t, err)
	assert.Equal(t, "master", role[0])

	s.KillMaster(t)
	killed := time.Now()
	promoted, addr, err := s.WaitPromotion(ctx)
	require.NoError(t, err)
	assert.Equal(t, s.ReplicaAddr(), addr)
	t.Logf("master %s killed; replica %s promoted %v later", s.MasterAddr(), addr, promoted.Sub(killed).Round(time.Millisecond))
	replica := redis.NewClient(&redis.Options{Addr: addr})
	defer replica.Close()
	require.Eventually(t, func() bool {
		role, err := replica.Do(ctx, "ROLE").Slice()
		return err == nil && role[0] == "master"
	}, 10*time.Second, 20*time.Millisecond, "the replica takes the master role")
	assert.Equal(t, "v", replica.Get(ctx, "k").Val(), "the replica had the write")
}
