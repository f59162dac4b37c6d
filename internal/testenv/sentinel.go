package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelMasterName is the name the sentinels monitor the master under.
const sentinelMasterName = "mymaster"

// SentinelOptions configure StartSentinel.
type SentinelOptions struct {
	// DownAfter is the sentinels' down-after-milliseconds: how long the
	// master may not answer before it is thought down. Default 1 s.
	DownAfter time.Duration
	// FailoverTimeout is the sentinels' failover-timeout. Default 5 s.
	FailoverTimeout time.Duration
	// ExtraArgs are added to the master's and the replica's command lines.
	ExtraArgs []string
}

// PrivateSentinel is a private Sentinel deployment on loopback: one master, one
// replica and three sentinels with a quorum of two, started by
// StartSentinel and stopped when its test ends.
type PrivateSentinel struct {
	master, replica *RedisServer
	sentinels       []*RedisServer
}

// StartSentinel starts a master, its replica and three sentinels of the
// test's own on free loopback ports (each in a directory of its own, since
// sentinels rewrite their config file), and waits until the replica is in
// sync (a write to the master is acknowledged by it) and every sentinel knows the master, the replica and the two other
// sentinels. Everything is stopped when t ends. A missing redis-server skips
// or fails t (see Missing).
func StartSentinel(t testing.TB, opts SentinelOptions) *PrivateSentinel {
	t.Helper()
	requireRedisServer(t)
	if opts.DownAfter <= 0 {
		opts.DownAfter = time.Second
	}
	if opts.FailoverTimeout <= 0 {
		opts.FailoverTimeout = 5 * time.Second
	}
	base := t.TempDir()
	dir := func(name string) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	data := append([]string{"--appendonly", "no", "--repl-diskless-sync-delay", "0"}, opts.ExtraArgs...)
	s := &PrivateSentinel{}
	s.master = launchRedis(t, dir("master"), "", func(int) []string { return data }, freePort)
	s.replica = launchRedis(t, dir("replica"), "", func(int) []string {
		return append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(s.master.Port())}, data...)
	}, freePort)
	for i := range 3 {
		d := dir("sentinel-" + strconv.Itoa(i))
		conf := filepath.Join(d, "sentinel.conf")
		text := fmt.Sprintf("port 0\nbind 127.0.0.1\nsentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s %d\n",
			sentinelMasterName, s.master.Port(), sentinelMasterName, opts.DownAfter.Milliseconds(),
			sentinelMasterName, opts.FailoverTimeout.Milliseconds())
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		s.sentinels = append(s.sentinels, launchRedis(t, d, conf,
			func(int) []string { return []string{"--sentinel"} }, freePort))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.waitReady(ctx); err != nil {
		t.Fatalf("sentinel deployment not ready: %v", err)
	}
	return s
}

// MasterName returns the name the sentinels monitor the master under.
func (s *PrivateSentinel) MasterName() string { return sentinelMasterName }

// SentinelAddrs returns the addresses of the three sentinels.
func (s *PrivateSentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, n := range s.sentinels {
		addrs[i] = n.Addr()
	}
	return addrs
}

// MasterAddr returns the address of the master the deployment started with.
func (s *PrivateSentinel) MasterAddr() string { return s.master.Addr() }

// ReplicaAddr returns the address of the replica the deployment started with.
func (s *PrivateSentinel) ReplicaAddr() string { return s.replica.Addr() }

// KillMaster ends the master the deployment started with by SIGKILL and
// waits until its process is gone.
func (s *PrivateSentinel) KillMaster(t testing.TB) {
	t.Helper()
	s.master.Kill(t)
}

// RestartMasterAsReplica starts the master the deployment started with
// again, after KillMaster, on its port and directory, as a replica of the
// master at addr (the sentinels would convert it themselves, but only after
// seeing it back for several seconds).
func (s *PrivateSentinel) RestartMasterAsReplica(t testing.TB, addr string) {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("restart %s as a replica of %q: %v", s.master.Addr(), addr, err)
	}
	s.master.Restart(t, "--replicaof", host, port)
}

// WaitPromotion waits until a sentinel names the replica as the master,
// asking every sentinel with SENTINEL get-master-addr-by-name every 20 ms. It
// returns when that was first seen and the replica's address.
func (s *PrivateSentinel) WaitPromotion(ctx context.Context) (time.Time, string, error) {
	var clients []*redis.SentinelClient
	for _, n := range s.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DialTimeout: time.Second})
		defer sc.Close()
		clients = append(clients, sc)
	}
	last := errors.New("no reply yet")
	for {
		for _, sc := range clients {
			addr, err := sc.GetMasterAddrByName(ctx, sentinelMasterName).Result()
			switch {
			case err != nil:
				last = err
			case len(addr) == 2 && net.JoinHostPort(addr[0], addr[1]) == s.replica.Addr():
				return time.Now(), s.replica.Addr(), nil
			default:
				last = fmt.Errorf("sentinel %s names %v", sc, addr)
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, "", fmt.Errorf("promotion of %s: %w (last: %v)", s.replica.Addr(), ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitReady waits until the replica is in sync, a write to the master is
// acknowledged by it (WAIT 1), and every sentinel knows the master, the
// replica and the other two sentinels.
func (s *PrivateSentinel) waitReady(ctx context.Context) error { return pollUntil(ctx, s.ready) }

func (s *PrivateSentinel) ready(ctx context.Context) error {
	info, err := nodeCommand(ctx, s.replica.Addr(), func(ctx context.Context, rc *redis.Client) (string, error) {
		return rc.Info(ctx, "replication").Result()
	})
	if err != nil {
		return fmt.Errorf("replica %s: %w", s.replica.Addr(), err)
	}
	if !strings.Contains(info, "master_link_status:up") {
		return fmt.Errorf("replica %s: link to its master not up yet", s.replica.Addr())
	}
	if err := probeReplication(ctx, s.master.Addr(), replicationProbeKey+"sentinel"); err != nil {
		return err
	}
	for _, n := range s.sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: n.Addr(), MaxRetries: -1, DialTimeout: time.Second})
		err := sentinelKnowsAll(ctx, sc, s.master.Addr(), s.replica.Addr())
		sc.Close()
		if err != nil {
			return fmt.Errorf("sentinel %s: %w", n.Addr(), err)
		}
	}
	return nil
}

// sentinelKnowsAll checks that a sentinel names master as the master, knows
// replica as a replica that is neither down nor disconnected, and knows two
// other sentinels.
func sentinelKnowsAll(ctx context.Context, sc *redis.SentinelClient, master, replica string) error {
	addr, err := sc.GetMasterAddrByName(ctx, sentinelMasterName).Result()
	if err != nil {
		return err
	}
	if len(addr) != 2 || net.JoinHostPort(addr[0], addr[1]) != master {
		return fmt.Errorf("names the master %v, not %s", addr, master)
	}
	replicas, err := sc.Replicas(ctx, sentinelMasterName).Result()
	if err != nil {
		return err
	}
	known := false
	for _, r := range replicas {
		if net.JoinHostPort(r["ip"], r["port"]) == replica && r["flags"] == "slave" {
			known = true
		}
	}
	if !known {
		return fmt.Errorf("does not know replica %s as healthy yet (knows %v)", replica, replicas)
	}
	others, err := sc.Sentinels(ctx, sentinelMasterName).Result()
	if err != nil {
		return err
	}
	if len(others) != 2 {
		return fmt.Errorf("knows %d other sentinels, not 2", len(others))
	}
	return nil
}
