package main

import (
	"context"
	"fmt"
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
	return bareKeyOf(int(crc32.ChecksumIEEE(p) & (bareSlots - 1)))
}

// bareKeyOf is the key of bare slot i.
func bareKeyOf(i int) string { return "bare:{" + strconv.Itoa(i) + "}" }

// bareZAdd writes pl with go-redis pipelines of batch commands, one member per ZADD.
func bareZAdd(ctx context.Context, r *redis.Client, pl [][]byte, batch int) error {
	for start := 0; start < len(pl); start += batch {
		pipe := r.Pipeline()
		for i := start; i < min(start+batch, len(pl)); i++ {
			pipe.ZAdd(ctx, bareKey(pl[i]), redis.Z{Score: float64(spreadPriority(i)), Member: pl[i]})
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
	}
	return nil
}

// bareCount returns how many members the bare keys hold (on a single server
// or a Cluster).
func bareCount(ctx context.Context, r redis.Cmdable) (int64, error) {
	keys := make([]string, bareSlots)
	for i := range keys {
		keys[i] = bareKeyOf(i)
	}
	return zcardSum(ctx, r, keys)
}

// zcardSum returns how many entries the sorted sets keys hold together.
func zcardSum(ctx context.Context, r redis.Cmdable, keys []string) (int64, error) {
	pipe := r.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.ZCard(ctx, k)
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

// produceZAdds times write, which stores pl in the yardstick's keys, and
// checks that every member was stored; what names write in the error.
func produceZAdds(what string, write func(ctx context.Context, addr string, pl [][]byte) error) func(ctx context.Context, e *env) (metrics, error) {
	return func(ctx context.Context, e *env) (metrics, error) {
		pl := payloads(e.n, "p")
		m := metrics{}
		meter := startMeter(ctx, e)
		if err := write(ctx, e.addr, pl); err != nil {
			return nil, err
		}
		if err := meter.stop(ctx, e.n, m); err != nil {
			return nil, err
		}
		r := newRedis(e.addr)
		defer r.Close()
		if got, err := bareCount(ctx, r); err != nil || got != int64(e.n) {
			return nil, fmt.Errorf("%s stored %d of %d (%v)", what, got, e.n, err)
		}
		return m, nil
	}
}
