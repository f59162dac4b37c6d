package browsertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// This module cannot import the core's internal/testenv, so it reads the
// same environment: RMQ_REDIS_ADDR names the real Redis that scripts/test.sh
// starts; with CI=true or RMQ_REQUIRE_SERVERS=1 a missing Redis or Chromium
// fails the test instead of skipping it.

// required reports whether a missing server or browser fails the test.
func required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("RMQ_REQUIRE_SERVERS") == "1"
}

// missing skips t, or fails it when servers are required.
func missing(t testing.TB, what string) {
	t.Helper()
	if required() {
		t.Fatalf("%s, and servers are required (CI=true or RMQ_REQUIRE_SERVERS=1): run scripts/test.sh", what)
	}
	t.Skipf("%s: run scripts/test.sh", what)
}

// realRedis returns a client of the real Redis.
func realRedis(t testing.TB) *redis.Client {
	t.Helper()
	addr := os.Getenv("RMQ_REDIS_ADDR")
	if addr == "" || testing.Short() {
		missing(t, "RMQ_REDIS_ADDR is not set")
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

// chromium returns the path of the Chromium binary.
func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missing(t, "chromium is not installed (apt-get install chromium)")
	return ""
}

// artifacts returns the directory for screenshots: RMQ_ARTIFACTS_DIR when
// set, else a temporary one.
func artifacts(t testing.TB) string {
	if dir := os.Getenv("RMQ_ARTIFACTS_DIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// namespace returns a fresh namespace whose keys are deleted when t ends.
func namespace(t testing.TB, r *redis.Client, prefix string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	ns := prefix + "-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := r.Scan(ctx, 0, ns+":*", 1000).Iterator()
		for iter.Next(ctx) {
			r.Unlink(ctx, iter.Val())
		}
	})
	return ns
}
