package rdb

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// SaveTopic implements Broker with HSETNX, so the first definition wins and
// concurrent definers all read the same one back.
func (b *redisBroker) SaveTopic(ctx context.Context, name, def string) (string, bool, error) {
	key := b.keys.Topics()
	added, err := b.rdb.HSetNX(ctx, key, name, def).Result()
	if err != nil {
		return "", false, err
	}
	if added {
		return def, true, nil
	}
	stored, err := fieldOnMaster(ctx, b.rdb, key, name) // the winner's, written a moment ago maybe
	return stored, false, err
}

// UnsaveTopic implements Broker.
func (b *redisBroker) UnsaveTopic(ctx context.Context, name, def string) error {
	return hashDelIfScript.Run(ctx, b.rdb, []string{b.keys.Topics()}, name, def).Err()
}

// LoadTopic implements Broker, reading on the master (masterread.go).
func (b *redisBroker) LoadTopic(ctx context.Context, name string) (string, bool, error) {
	def, err := fieldOnMaster(ctx, b.rdb, b.keys.Topics(), name)
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return def, true, nil
}

// LoadTopics implements Broker, reading on the master (masterread.go).
func (b *redisBroker) LoadTopics(ctx context.Context) (map[string]string, error) {
	return hashOnMaster(ctx, b.rdb, b.keys.Topics())
}
