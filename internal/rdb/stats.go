package rdb

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// StatsDelta is what one client adds to a topic's shared metrics: field →
// increment, into the all-time hash and the hash of the given minute.
type StatsDelta struct {
	Topic  string
	Minute int64 // Unix minutes
	Fields map[string]int64
}

// statsMinuteTTL is how long a minute's hash is kept.
const statsMinuteTTL = 2 * time.Hour

// AddStats adds deltas in one pipeline (every key shares the namespace's
// hash tag), routed (RoutedPipeline: an increment runs once).
func (b *redisBroker) AddStats(ctx context.Context, deltas []StatsDelta) error {
	p := NewRoutedPipeline(b.rdb)
	for _, d := range deltas {
		total, minute := b.keys.Stats(d.Topic), b.keys.StatsMinute(d.Topic, d.Minute)
		pipe := p.On(ctx, total)
		for f, n := range d.Fields {
			if n != 0 {
				pipe.HIncrBy(ctx, total, f, n)
				pipe.HIncrBy(ctx, minute, f, n)
			}
		}
		pipe.Expire(ctx, minute, statsMinuteTTL)
	}
	return p.Exec(ctx)
}

// Stats returns topic's all-time shared metrics and those of the minutes
// from..to (Unix minutes, both included), oldest first.
func (b *redisBroker) Stats(ctx context.Context, topic string, from, to int64) (map[string]int64, []map[string]int64, error) {
	p := NewRoutedPipeline(b.rdb)
	pipe := p.On(ctx, b.keys.Stats(topic))
	total := pipe.HGetAll(ctx, b.keys.Stats(topic))
	var minutes []*redis.MapStringStringCmd
	for m := from; m <= to; m++ {
		minutes = append(minutes, pipe.HGetAll(ctx, b.keys.StatsMinute(topic, m)))
	}
	if err := p.Exec(ctx); err != nil {
		return nil, nil, err
	}
	out := make([]map[string]int64, len(minutes))
	for i, m := range minutes {
		out[i] = parseCounts(m.Val())
	}
	return parseCounts(total.Val()), out, nil
}

func parseCounts(m map[string]string) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k], _ = strconv.ParseInt(v, 10, 64)
	}
	return out
}
