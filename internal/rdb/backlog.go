package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// SlotBacklog is one slot's sizes and, for time topics, the earliest due
// score in store above the retry range (a due time in ms; 0 for none).
type SlotBacklog struct {
	SlotCounts
	EarliestDueMs int64
}

// Backlog implements Broker: per slot four ZCARDs and, with dueTimes, the
// lowest store score above MaxRetries, all in one pipeline: O(slots)
// commands whatever the sets hold, routed (RoutedPipeline). It also returns
// the Redis time in ms.
func (b *redisBroker) Backlog(ctx context.Context, slots []SlotKeys, dueTimes bool) ([]SlotBacklog, int64, error) {
	p := b.pipeline()
	cards := make([][4]*redis.IntCmd, len(slots))
	heads := make([]*redis.ZSliceCmd, len(slots))
	for i, k := range slots {
		pipe := p.On(ctx, k.Store)
		cards[i] = [4]*redis.IntCmd{pipe.ZCard(ctx, k.Store), pipe.ZCard(ctx, k.Retry), pipe.ZCard(ctx, k.Prepare), pipe.ZCard(ctx, k.Dead)}
		if dueTimes {
			heads[i] = pipe.ZRangeByScoreWithScores(ctx, k.Store, &redis.ZRangeBy{Min: "(16", Max: "+inf", Count: 1})
		}
	}
	timeKey := "" // TIME goes to a node already asked
	if len(slots) > 0 {
		timeKey = slots[0].Store
	}
	now := p.On(ctx, timeKey).Time(ctx)
	if err := p.Exec(ctx); err != nil {
		return nil, 0, err
	}
	out := make([]SlotBacklog, len(slots))
	for i, c := range cards {
		out[i].SlotCounts = SlotCounts{Store: c[0].Val(), Retry: c[1].Val(), Prepare: c[2].Val(), Dead: c[3].Val()}
		if heads[i] != nil {
			if zs := heads[i].Val(); len(zs) > 0 {
				out[i].EarliestDueMs = int64(zs[0].Score)
			}
		}
	}
	return out, now.Val().UnixMilli(), nil
}
