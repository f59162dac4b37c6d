// Package testenv gives tests the Redis and ZooKeeper servers started by
// scripts/test.sh: always an in-process miniredis, plus a real redis-server
// (RMQ_REDIS_ADDR) and a real 6-node Redis Cluster (RMQ_CLUSTER_ADDRS) when
// set. When servers are required (CI=true or RMQ_REQUIRE_SERVERS=1) a missing
// one fails the test instead of skipping it.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// Backend is one Redis deployment a test runs against.
type Backend struct {
	Name string
	// Redis is a client of the deployment; closed when the test ends.
	Redis redis.UniversalClient
	// Mini is the in-process server (for its clock control), nil on real servers.
	Mini *miniredis.Miniredis
}

// Real reports whether the backend is a real redis-server.
func (b Backend) Real() bool { return b.Mini == nil }

// Required reports whether missing servers fail tests.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("RMQ_REQUIRE_SERVERS") == "1"
}

// Missing skips or fails t for a server named by env var that is not set.
func Missing(t testing.TB, envVar string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s is not set, and servers are required (CI=true or RMQ_REQUIRE_SERVERS=1): run scripts/test.sh", envVar)
	}
	t.Skipf("%s not set: run scripts/test.sh for real servers", envVar)
}

// Mini returns a fresh miniredis backend.
func Mini(t testing.TB) Backend {
	m := miniredis.RunT(t)
	c := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{m.Addr()}})
	t.Cleanup(func() { c.Close() })
	return Backend{Name: "miniredis", Redis: c, Mini: m}
}

// Single returns the real standalone redis-server.
func Single(t testing.TB) Backend {
	t.Helper()
	addr := os.Getenv("RMQ_REDIS_ADDR")
	if addr == "" || testing.Short() {
		Missing(t, "RMQ_REDIS_ADDR")
	}
	c := redis.NewClient(&redis.Options{Addr: addr})
	ping(t, c)
	t.Cleanup(func() { c.Close() })
	return Backend{Name: "redis", Redis: c}
}

// Cluster returns the real Redis Cluster.
func Cluster(t testing.TB) Backend {
	t.Helper()
	return ClusterVia(t, nil)
}

// ClusterVia is Cluster whose client dials the node at each key of via at
// its value instead (a Partition's Addr): the client reaches that node only
// through it, whatever address the slot map or a redirection names. Each of
// tune may change the client's options first.
func ClusterVia(t testing.TB, via map[string]string, tune ...func(*redis.ClusterOptions)) Backend {
	t.Helper()
	addrs := os.Getenv("RMQ_CLUSTER_ADDRS")
	if addrs == "" || testing.Short() {
		Missing(t, "RMQ_CLUSTER_ADDRS")
	}
	o := &redis.ClusterOptions{Addrs: strings.Split(addrs, ",")}
	if len(via) > 0 {
		d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute} // go-redis's own dialer's settings
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if to, ok := via[addr]; ok {
				addr = to
			}
			return d.DialContext(ctx, network, addr)
		}
	}
	for _, f := range tune {
		f(o)
	}
	c := redis.NewClusterClient(o)
	ping(t, c)
	t.Cleanup(func() { c.Close() })
	return Backend{Name: "cluster", Redis: c}
}

func ping(t testing.TB, c redis.UniversalClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("redis ping: %v", err)
	}
}

// starter names a backend and starts (or connects to) it.
type starter struct {
	name  string
	start func(testing.TB) Backend
}

// allBackends and realBackends are those of ForEach and ForEachReal, in order.
var (
	allBackends  = []starter{{"miniredis", Mini}, {"redis", Single}, {"cluster", Cluster}}
	realBackends = allBackends[1:]
)

// ForEach runs fn as a subtest on miniredis, real Redis and real Cluster.
// Real servers are skipped in -short mode (unless required).
func ForEach(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	inTurn(t, fn, allBackends)
}

// ForEachReal runs fn on real Redis and real Cluster only (for behaviour that
// needs real time or real Lua).
func ForEachReal(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	inTurn(t, fn, realBackends)
}

// ForEachAtOnce is ForEach with the three subtests running at the same time,
// for tests that spend their time waiting (on timers, flushes, leases) rather
// than computing, and that read nothing process-wide (goroutine counts, the
// process's CPU). It returns once all three have ended. It starts them in
// goroutines of its own, not with t.Parallel, so go test's -parallel limit
// does not queue them and the caller's code after it still runs last.
func ForEachAtOnce(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	atOnce(t, fn, allBackends)
}

// ForEachRealAtOnce is ForEachReal with its two subtests at the same time,
// as ForEachAtOnce runs them.
func ForEachRealAtOnce(t *testing.T, fn func(t *testing.T, b Backend)) {
	t.Helper()
	atOnce(t, fn, realBackends)
}

// inTurn runs fn as one subtest per backend, one after the other.
func inTurn(t *testing.T, fn func(t *testing.T, b Backend), backends []starter) {
	for _, s := range backends {
		t.Run(s.name, func(t *testing.T) { fn(t, s.start(t)) })
	}
}

// atOnce runs fn as one subtest per backend, all at the same time (testing
// allows t.Run from several goroutines, if all return before t's function).
func atOnce(t *testing.T, fn func(t *testing.T, b Backend), backends []starter) {
	var wg sync.WaitGroup
	for _, s := range backends {
		wg.Go(func() { t.Run(s.name, func(t *testing.T) { fn(t, s.start(t)) }) })
	}
	wg.Wait()
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9]+`)

// Namespace returns a namespace unique to t, and deletes its keys when t ends.
func Namespace(t testing.TB, b Backend) string {
	name := unsafeChars.ReplaceAllString(t.Name(), "-")
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	var r [4]byte
	_, _ = rand.Read(r[:])
	ns := strings.Trim(name, "-") + "-" + hex.EncodeToString(r[:])
	t.Cleanup(func() { DeleteNamespace(b.Redis, ns) })
	return ns
}

// DeleteNamespace removes every key of namespace ns (on every master of a cluster).
func DeleteNamespace(c redis.UniversalClient, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	del := func(ctx context.Context, n redis.UniversalClient) error {
		iter := n.Scan(ctx, 0, ns+":*", 1000).Iterator()
		for iter.Next(ctx) {
			n.Del(ctx, iter.Val())
		}
		return iter.Err()
	}
	if cc, ok := c.(*redis.ClusterClient); ok {
		_ = cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error { return del(ctx, n) })
		return
	}
	_ = del(ctx, c)
}

// ZooKeeper returns the client addresses of the real ZooKeeper ensemble
// (RMQ_ZK_SERVERS), skipping or failing t when it is not set.
func ZooKeeper(t testing.TB) []string {
	t.Helper()
	servers := os.Getenv("RMQ_ZK_SERVERS")
	if servers == "" || testing.Short() {
		Missing(t, "RMQ_ZK_SERVERS")
	}
	return strings.Split(servers, ",")
}
