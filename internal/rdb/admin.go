package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Cancel implements Broker.
func (b *redisBroker) Cancel(ctx context.Context, keys SlotKeys, member []byte) (bool, error) {
	n, err := runOnSlot(ctx, b.rdb, cancelScript, []string{keys.Store, keys.Retry}, member).Int64()
	return n > 0, err
}

// Counts implements Broker: four ZCARDs per slot, routed (RoutedPipeline).
func (b *redisBroker) Counts(ctx context.Context, slots []SlotKeys) ([]SlotCounts, error) {
	p := b.pipeline()
	cmds := make([][4]*redis.IntCmd, len(slots))
	for i, k := range slots {
		pipe := p.On(ctx, k.Store)
		cmds[i] = [4]*redis.IntCmd{pipe.ZCard(ctx, k.Store), pipe.ZCard(ctx, k.Retry), pipe.ZCard(ctx, k.Prepare), pipe.ZCard(ctx, k.Dead)}
	}
	if err := p.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]SlotCounts, len(slots))
	for i, c := range cmds {
		out[i] = SlotCounts{Store: c[0].Val(), Retry: c[1].Val(), Prepare: c[2].Val(), Dead: c[3].Val()}
	}
	return out, nil
}

// Dead implements Broker, reading on the master (masterread.go).
func (b *redisBroker) Dead(ctx context.Context, keys SlotKeys, limit int64) ([]DeadEntry, error) {
	p := b.pipeline()
	read := p.On(ctx, keys.Dead).ZRangeWithScores(ctx, keys.Dead, 0, limit-1)
	if err := p.Exec(ctx); err != nil {
		return nil, err
	}
	zs := read.Val()
	out := make([]DeadEntry, len(zs))
	for i, z := range zs {
		m, _ := z.Member.(string)
		out[i] = DeadEntry{Member: []byte(m), DiedMs: int64(z.Score)}
	}
	return out, nil
}

// Requeue implements Broker.
func (b *redisBroker) Requeue(ctx context.Context, keys SlotKeys, limit int, members [][]byte) (int64, error) {
	args := make([]any, 0, 1+len(members))
	args = append(args, limit)
	for _, m := range members {
		args = append(args, m)
	}
	return runOnSlot(ctx, b.rdb, requeueScript, []string{keys.Dead, keys.Store, keys.Retry}, args...).Int64()
}

// Purge implements Broker.
func (b *redisBroker) Purge(ctx context.Context, keys SlotKeys) (int64, error) {
	return b.rdb.ZRemRangeByRank(ctx, keys.Dead, 0, -1).Result()
}
