package rdb

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Controls returns every topic's stored flow control (topic → JSON).
func (b *redisBroker) Controls(ctx context.Context) (map[string]string, error) {
	return b.rdb.HGetAll(ctx, b.keys.Controls()).Result()
}

// SetControl stores topic's flow control ("" deletes it) and announces the
// change on the control channel.
func (b *redisBroker) SetControl(ctx context.Context, topic, control string) error {
	var err error
	if control == "" {
		err = b.rdb.HDel(ctx, b.keys.Controls(), topic).Err()
	} else {
		err = b.rdb.HSet(ctx, b.keys.Controls(), topic, control).Err()
	}
	if err != nil {
		return err
	}
	return b.rdb.Publish(ctx, b.keys.ControlChannel(), topic).Err()
}

// DeleteTopic removes every key of topic (slots 0..slots-1, its definition,
// flow control, assignment, shared metrics of the last two hours) without
// SCAN: the names are known. Keys of different hash tags go in one pipeline.
func (b *redisBroker) DeleteTopic(ctx context.Context, topic string, slots int) error {
	k := b.keys
	pipe := b.rdb.Pipeline()
	for i := range slots {
		s := k.Slot(topic, i)
		pipe.Del(ctx, s.Store, s.Prepare, s.Retry, s.Dead, s.Owner)
	}
	pipe.Del(ctx, k.Assignment(topic), k.Stats(topic))
	now := time.Now().Unix() / 60
	for m := now - int64(statsMinuteTTL/time.Minute) - 1; m <= now+1; m++ {
		pipe.Del(ctx, k.StatsMinute(topic, m))
	}
	pipe.HDel(ctx, k.Controls(), topic+"|paused", topic+"|limit")
	pipe.HDel(ctx, k.Topics(), topic)
	_, err := pipe.Exec(ctx)
	return err
}

// PresenceTopics returns the topics of each presence entry.
func (b *redisBroker) PresenceTopics(ctx context.Context) (map[string]string, error) {
	m, err := b.rdb.HGetAll(ctx, b.keys.PresenceTopics()).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return m, err
}
