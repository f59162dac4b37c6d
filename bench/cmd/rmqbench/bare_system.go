package main

import (
	"context"
	"hash/crc32"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// The yardstick: the same members written with plain ZADD, spread over
// bareSlots keys by CRC32 exactly as RMQ spreads them over its slots, with the
// same scores RMQ's Priority messages get. It is what RMQ's store costs at the
// least: one sorted-set entry per message and nothing else.

const bareSlots = 64

func bareKey(p []byte) string {
	return "bare:{" + strconv.Itoa(int(crc32.ChecksumIEEE(p)&(bareSlots-1))) + "}"
}

// bareZAdd writes pl with go-redis pipelines of batch commands, one member per ZADD.
func bareZAdd(ctx context.Context, r *redis.Client, pl [][]byte, batch int) error {
	for start := 0; start < len(pl); start += batch {
		pipe := r.Pipeline()
		for i := start; i < min(start+batch, len(pl)); i++ {
			pipe.ZAdd(ctx, bareKey(pl[i]), redis.Z{Score: float64(17 + i%1000), Member: pl[i]})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// bareCount returns how many members the bare keys hold.
func bareCount(ctx context.Context, r *redis.Client) (int64, error) {
	pipe := r.Pipeline()
	cmds := make([]*redis.IntCmd, bareSlots)
	for i := range cmds {
		cmds[i] = pipe.ZCard(ctx, "bare:{"+strconv.Itoa(i)+"}")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return 0, err
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}
