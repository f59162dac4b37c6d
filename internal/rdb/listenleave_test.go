package rdb

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A listen left while its subscription is still being made, to a server
// out of the process's reach, returns at once and delivers nothing after:
// not after go-redis gives up on the handshake (the client's read timeout),
// nor once the cut heals and the subscription goes through late.
func TestLeavingAListenWaitsForNoSubscriptionUnderWay(t *testing.T) {
	testenv.ForEachReal(t, func(t *testing.T, b testenv.Backend) {
		t.Parallel()
		ctx := context.Background()
		channel := testenv.Namespace(t, b) + ":leave"
		var client redis.UniversalClient
		var topo *topology
		var p *testenv.Partition
		if direct, ok := b.Redis.(*redis.ClusterClient); ok {
			client, p = viaPartition(t, testenv.MasterOf(t, direct, channel), 2*time.Second)
			topo = topologyOf(client)
		} else {
			p = testenv.StartPartition(t, b.Redis.(*redis.Client).Options().Addr)
			c := redis.NewClient(&redis.Options{Addr: p.Addr(), ReadTimeout: 2 * time.Second, MaxRetries: -1})
			t.Cleanup(func() { c.Close() })
			client = c
		}
		if topo != nil {
			require.NoError(t, client.Ping(ctx).Err(), "the slot map loaded")
		}
		p.Cut()

		var left, late atomic.Bool
		lctx, stop := context.WithCancel(ctx)
		done := make(chan time.Time)
		go func() {
			listenChannels(lctx, client, topo, []string{channel}, func(any) {
				if left.Load() {
					late.Store(true)
				}
			})
			left.Store(true)
			done <- time.Now()
		}()
		time.Sleep(300 * time.Millisecond) // the subscription under way
		stopped := time.Now()
		stop()
		took := (<-done).Sub(stopped)
		t.Logf("returned %v after its ctx ended", took)
		assert.Less(t, took, 200*time.Millisecond, "waited for the subscription under way")

		p.Heal()
		for range 10 {
			require.NoError(t, b.Redis.Publish(ctx, channel, "after").Err())
			time.Sleep(300 * time.Millisecond)
		}
		assert.False(t, late.Load(), "delivered after the listen returned")
	})
}

// The same for the sharded channels of a Cluster client that logs in: a
// connection to a master out of reach is accepted (a partition drops no
// handshake here; the proxy holds the bytes) and its AUTH goes unanswered,
// which held the listen's end until the dial's timeout.
func TestLeavingAShardListenWaitsForNoLoginUnderWay(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	user := testenv.ClusterUser(t, direct, ns+"-listener")
	channel := ns + ":{leave}"
	cutAddr := testenv.MasterOf(t, direct, channel)
	p := testenv.StartPartition(t, cutAddr)
	client := testenv.ClusterVia(t, map[string]string{cutAddr: p.Addr()}, func(o *redis.ClusterOptions) {
		o.Username, o.Password = user.Username, user.Password
	}).Redis
	require.NoError(t, client.Ping(ctx).Err(), "the slot map loaded")
	brk := New(client, NewKeyspace(ns)).(*redisBroker)
	p.Cut()

	lctx, stop := context.WithCancel(ctx)
	done := make(chan time.Time)
	go func() {
		brk.listenShards(lctx, []string{channel}, func(any) {})
		done <- time.Now()
	}()
	time.Sleep(300 * time.Millisecond) // the login under way
	stopped := time.Now()
	stop()
	took := (<-done).Sub(stopped)
	t.Logf("returned %v after its ctx ended", took)
	assert.Less(t, took, 200*time.Millisecond, "waited for the login under way")
}
