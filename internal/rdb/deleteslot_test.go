package rdb

import (
	"context"
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// deleteslot.lua deletes a slot's sets and owner record only when the sets
// are empty, unless forced, and reports their sizes; on miniredis, the real
// Redis and the real Cluster (every key of a slot shares its hash tag).
func TestDeleteSlot(t *testing.T) {
	cases := []struct {
		name        string
		fill        func(k SlotKeys) []string // keys to fill with one member each
		force       bool
		wantDeleted bool
		want        SlotCounts
	}{
		{name: "empty slot", fill: func(SlotKeys) []string { return nil }, wantDeleted: true},
		{name: "store", fill: func(k SlotKeys) []string { return []string{k.Store} }, want: SlotCounts{Store: 1}},
		{name: "retry", fill: func(k SlotKeys) []string { return []string{k.Retry} }, want: SlotCounts{Retry: 1}},
		{name: "prepare", fill: func(k SlotKeys) []string { return []string{k.Prepare} }, want: SlotCounts{Prepare: 1}},
		{name: "dead", fill: func(k SlotKeys) []string { return []string{k.Dead} }, want: SlotCounts{Dead: 1}},
		{name: "every set, forced", fill: func(k SlotKeys) []string { return []string{k.Store, k.Retry, k.Prepare, k.Dead} },
			force: true, wantDeleted: true, want: SlotCounts{Store: 1, Retry: 1, Prepare: 1, Dead: 1}},
		{name: "empty slot, forced", fill: func(SlotKeys) []string { return nil }, force: true, wantDeleted: true},
	}
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ks := NewKeyspace(testenv.Namespace(t, b))
		broker := New(b.Redis, ks)
		t.Cleanup(func() { broker.Close(context.Background()) })
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				k := ks.Slot("t", i)
				filled := c.fill(k)
				for _, key := range filled {
					require.NoError(t, b.Redis.ZAdd(ctx, key, redis.Z{Score: 20, Member: "m"}).Err())
				}
				require.NoError(t, b.Redis.Set(ctx, k.Owner, "3:w", 0).Err())

				deleted, before, err := broker.DeleteSlot(ctx, k, c.force)
				require.NoError(t, err)
				assert.Equal(t, c.wantDeleted, deleted)
				assert.Equal(t, c.want, before)
				for _, key := range []string{k.Store, k.Retry, k.Prepare, k.Dead, k.Owner} {
					n, err := b.Redis.Exists(ctx, key).Result()
					require.NoError(t, err)
					if c.wantDeleted {
						assert.Zero(t, n, "%s deleted", key)
					}
				}
				if !c.wantDeleted {
					for _, key := range filled {
						assert.Equal(t, int64(1), b.Redis.ZCard(ctx, key).Val(), "%s untouched", key)
					}
					owner, err := b.Redis.Get(ctx, k.Owner).Result()
					assert.False(t, errors.Is(err, redis.Nil))
					assert.Equal(t, "3:w", owner, "the owner record stays with a refused slot")
				}
			})
		}
	})
}
