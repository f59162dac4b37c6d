package rmqprom_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// This module cannot import the core's internal/testenv, so it reads the
// same environment: RMQ_REDIS_ADDR names the real Redis that scripts/test.sh
// starts; with CI=true or RMQ_REQUIRE_SERVERS=1 a missing one fails the test.

// serversRequired reports whether a missing server fails the test.
func serversRequired() bool {
	return os.Getenv("CI") == "true" || os.Getenv("RMQ_REQUIRE_SERVERS") == "1"
}

// realRedis returns a client of the real Redis, or skips (fails when
// servers are required) without one.
func realRedis(t testing.TB) *redis.Client {
	t.Helper()
	addr := os.Getenv("RMQ_REDIS_ADDR")
	if addr == "" || testing.Short() {
		if serversRequired() {
			t.Fatal("RMQ_REDIS_ADDR is not set, and servers are required (CI=true or RMQ_REQUIRE_SERVERS=1): run scripts/test.sh")
		}
		t.Skip("RMQ_REDIS_ADDR not set: run scripts/test.sh for a real Redis")
	}
	r := redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := r.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis %s: %v", addr, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// miniRedis returns a client of a fresh in-process Redis.
func miniRedis(t testing.TB) *redis.Client {
	m := miniredis.RunT(t)
	r := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { r.Close() })
	return r
}

// forEachRedis runs fn on miniredis and on the real Redis.
func forEachRedis(t *testing.T, fn func(t *testing.T, r *redis.Client)) {
	t.Run("miniredis", func(t *testing.T) { fn(t, miniRedis(t)) })
	t.Run("redis", func(t *testing.T) { fn(t, realRedis(t)) })
}

// forEachRedisAtOnce is forEachRedis with both subtests at the same time,
// for tests that mostly wait; it returns once both have ended.
func forEachRedisAtOnce(t *testing.T, fn func(t *testing.T, r *redis.Client)) {
	var wg sync.WaitGroup
	wg.Go(func() { t.Run("miniredis", func(t *testing.T) { fn(t, miniRedis(t)) }) })
	wg.Go(func() { t.Run("redis", func(t *testing.T) { fn(t, realRedis(t)) }) })
	wg.Wait()
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9]+`)

// namespace returns a namespace unique to t whose keys are deleted when t
// ends.
func namespace(t testing.TB, r *redis.Client) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.Trim(unsafeChars.ReplaceAllString(t.Name(), "-"), "-")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	ns := name + "-" + hex.EncodeToString(b[:])
	t.Cleanup(func() { deleteNamespace(r, ns) })
	return ns
}

// deleteNamespace unlinks every key of namespace ns.
func deleteNamespace(r *redis.Client, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	iter := r.Scan(ctx, 0, ns+":*", 1000).Iterator()
	var keys []string
	flush := func() {
		if len(keys) > 0 {
			r.Unlink(ctx, keys...)
			keys = keys[:0]
		}
	}
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == 1000 {
			flush()
		}
	}
	flush()
}
