package rdb

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/testenv"
)

// Scripts that isolate what a one-pop commit's check costs (see commitOnePop
// in cycle.lua): KEYS[1] a prepare set, ARGV[1] the pop's prepare score, then
// the committed members, if any, in byte order.
const (
	// checkReadBack reads the entries of the score back and compares them
	// with the members, as the cycle does; it returns how many matched.
	checkReadBack = `local h = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1], 'LIMIT', 0, 2 * (#ARGV - 1) + 1)
local k = 1
while k <= #h and h[k] == ARGV[k + 1] do k = k + 1 end
return k - 1`
	// checkCount only counts the entries of the score.
	checkCount = `return redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[1])`
)

// BenchmarkCommitCheck measures, on the server of RMQ_REDIS_ADDR, the Redis
// CPU per message of checking a commit of 1,000 members popped with one
// prepare score against a prepare set holding exactly those entries:
// "read-back" as the cycle checks it (the members as arguments, the entries
// read back and compared), "arguments" the members passed but only counted,
// and "count" a ZCOUNT of the score alone. The difference between the first
// and the last is what a check without the members would save.
func BenchmarkCommitCheck(b *testing.B) {
	const n = 1000
	for _, kind := range []string{"read-back", "arguments", "count"} {
		b.Run(kind, func(b *testing.B) {
			be := testenv.Single(b)
			ks := NewKeyspace(testenv.Namespace(b, be))
			prepare, ctx := ks.Slot("bench", 0).Prepare, context.Background()
			const score = 1_764_000_000_016
			members := make([]any, 0, n+1)
			members = append(members, strconv.Itoa(score))
			zs := make([]redis.Z, n)
			for i := range zs {
				m := fmt.Sprintf("%064d", i) // byte order is index order
				zs[i] = redis.Z{Score: score, Member: m}
				members = append(members, m)
			}
			if err := be.Redis.ZAdd(ctx, prepare, zs...).Err(); err != nil {
				b.Fatal(err)
			}
			script, args, want := redis.NewScript(checkReadBack), members, int64(n)
			switch kind {
			case "arguments":
				script = redis.NewScript(checkCount)
			case "count":
				script, args = redis.NewScript(checkCount), members[:1]
			}
			keys := []string{prepare}
			if err := script.Load(ctx, be.Redis).Err(); err != nil {
				b.Fatal(err)
			}
			cpu0 := redisCPU(b, be.Redis)
			b.ResetTimer()
			for range b.N {
				got, err := script.EvalSha(ctx, be.Redis, keys, args...).Int64()
				if err != nil {
					b.Fatal(err)
				}
				if got != want {
					b.Fatalf("%s: got %d, want %d", kind, got, want)
				}
			}
			b.StopTimer()
			b.ReportMetric((redisCPU(b, be.Redis)-cpu0)*1e6/float64(b.N*n), "redis-µs/msg")
		})
	}
}
