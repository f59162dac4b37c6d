package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Publish implements Broker.
func (b *redisBroker) Publish(ctx context.Context, channel, payload string) error {
	return b.rdb.Publish(ctx, channel, payload).Err()
}

// Subscribe implements Broker.
func (b *redisBroker) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return b.rdb.Subscribe(ctx, channels...)
}
