package rdb

import (
	"context"
	"strconv"
	"sync"
	"time"

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

// listenNodes is how many masters of a Cluster a Listen subscribes through:
// a PUBLISH reaches every node, so one live subscription is enough, and a
// second keeps the messages coming while the first one's node is dead.
const listenNodes = 2

// listenRefresh is how often a Listen on a Cluster looks at the slot map for
// masters to subscribe through.
const listenRefresh = time.Second

// Listen implements Broker. On a single node it is one subscription. On a
// Cluster, go-redis subscribes through the master of one of the channels'
// hash slots, and while that master is dead (until its replica is promoted
// and the slot map reloaded) nothing arrives; so Listen subscribes through
// listenNodes masters at once, chosen from the client's slot map and looked
// at again every listenRefresh, and delivers what either receives: every
// message and (re)subscription arrives about once per node. There it also
// follows the sharded channels shards, each on its own master (shardsub.go);
// on a single node, where wake-ups are not sharded, it ignores them.
func (b *redisBroker) Listen(ctx context.Context, channels, shards []string, deliver func(msg any)) {
	if b.topo == nil {
		ps := b.rdb.Subscribe(ctx, channels...)
		defer ps.Close()
		pump(ctx, ps, deliver)
		return
	}
	var mu sync.Mutex // deliver is not called concurrently
	serial := func(m any) {
		mu.Lock()
		defer mu.Unlock()
		deliver(m)
	}
	subs := make(map[string]context.CancelFunc) // by node address
	var wg sync.WaitGroup
	defer func() {
		for _, stop := range subs {
			stop()
		}
		wg.Wait()
	}()
	if len(shards) > 0 {
		wg.Go(func() { b.listenShards(ctx, shards, serial) })
	}
	for {
		want := b.listenMasters(ctx)
		for addr, stop := range subs {
			if want[addr] == nil {
				stop()
				delete(subs, addr)
			}
		}
		for addr, node := range want {
			if subs[addr] != nil {
				continue
			}
			nctx, stop := context.WithCancel(ctx)
			subs[addr] = stop
			wg.Go(func() {
				ps := node.Subscribe(nctx, channels...)
				defer ps.Close()
				pump(nctx, ps, serial)
			})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(listenRefresh):
		}
	}
}

// listenMasters returns up to listenNodes masters of the client's current
// slot map (no I/O): those of fixed anchor keys, so that the choice stays
// the same until the map changes.
func (b *redisBroker) listenMasters(ctx context.Context) map[string]*redis.Client {
	out := make(map[string]*redis.Client, listenNodes)
	for i := 0; i < 64 && len(out) < listenNodes; i++ {
		node, err := b.topo.client.MasterForKey(ctx, "rmq-listen:{"+strconv.Itoa(i)+"}")
		if err != nil {
			continue
		}
		out[node.Options().Addr] = node
	}
	return out
}

// pump delivers what ps receives until ctx ends.
func pump(ctx context.Context, ps *redis.PubSub, deliver func(msg any)) {
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-msgs:
			deliver(m)
		}
	}
}
