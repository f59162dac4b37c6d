package rdb

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ShardedWakes implements Broker.
func (b *redisBroker) ShardedWakes() bool { return b.topo != nil }

// PublishWake implements Broker.
func (b *redisBroker) PublishWake(ctx context.Context, p Publication) error {
	err := b.publish(ctx, b.rdb, p).Err()
	if err != nil {
		b.wakes.failedOn(p.Channel, p.Payload, err)
	}
	return err
}

// publish sends p through c (a client or a pipeline): on a Cluster to its
// sharded channel, which the cluster bus carries only to that shard's
// replicas, where a PUBLISH goes to every node (unless the Cluster has no
// sharded pub/sub: wakeOutcome).
func (b *redisBroker) publish(ctx context.Context, c redis.Cmdable, p Publication) *redis.IntCmd {
	if b.topo != nil && p.Shard != "" && b.wakes.sharded() {
		return c.SPublish(ctx, p.Shard, p.Payload)
	}
	return c.Publish(ctx, p.Channel, p.Payload)
}

// Listen implements Broker. On a Cluster it follows the sharded channels
// shards too, each on its own master (shardsub.go); on a single node, where
// wake-ups are not sharded, it ignores them. The channels go through
// listenChannels.
func (b *redisBroker) Listen(ctx context.Context, channels, shards []string, deliver func(msg any)) {
	if b.topo == nil {
		listenChannels(ctx, b.rdb, nil, channels, deliver)
		return
	}
	var mu sync.Mutex // deliver is not called concurrently
	serial := func(m any) {
		mu.Lock()
		defer mu.Unlock()
		deliver(m)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	if len(shards) > 0 {
		wg.Go(func() { b.listenShards(ctx, shards, serial) })
	}
	listenChannels(ctx, b.rdb, b.topo, channels, serial)
}
