package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterOptions configure StartCluster.
type ClusterOptions struct {
	// NodeTimeout is the cluster-node-timeout: how long a master may not
	// answer before it is marked failed. Default 2 s.
	NodeTimeout time.Duration
	// PartialCoverage starts the nodes with cluster-require-full-coverage
	// no: while some hash slot has no live master, the other slots are still
	// served. By default (Redis's default, yes) every node refuses every
	// command with CLUSTERDOWN from when a dead master is marked failed until
	// its replica takes over.
	PartialCoverage bool
	// ExtraArgs are added to every node's command line.
	ExtraArgs []string
}

// PrivateCluster is a private 6-node Redis Cluster (3 masters, 3 replicas) on
// loopback, started by StartCluster and stopped when its test ends.
type PrivateCluster struct {
	nodes    []*RedisServer
	base     string                  // the directory of the nodes' directories
	nodeArgs func(port int) []string // a node's command line

	mu     sync.Mutex
	killed map[string]killedMaster // by address
}

// ClusterMaster is a master of the cluster and the hash slots it serves.
type ClusterMaster struct {
	Addr  string
	ID    string
	Slots []SlotRange
}

// killedMaster is what a killed master held at its kill, and which replica
// should take it over.
type killedMaster struct {
	ClusterMaster
	replica string // address of its replica
}

// StartCluster starts a 6-node Redis Cluster of the test's own on free
// loopback ports (each node in a directory of its own), creates it with
// redis-cli --cluster create, and waits until every node reports
// cluster_state:ok, every replica's link to its master is up and every
// master's writes are acknowledged by its replica. The nodes
// are stopped when t ends. A missing redis-server or redis-cli skips or fails
// t (see Missing).
func StartCluster(t testing.TB, opts ClusterOptions) *PrivateCluster {
	t.Helper()
	requireRedisServer(t)
	requireBinary(t, "redis-cli")
	if opts.NodeTimeout <= 0 {
		opts.NodeTimeout = 2 * time.Second
	}
	coverage := "yes"
	if opts.PartialCoverage {
		coverage = "no"
	}
	c := &PrivateCluster{killed: map[string]killedMaster{}, base: t.TempDir(), nodeArgs: func(port int) []string {
		return append([]string{"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes-" + strconv.Itoa(port) + ".conf",
			"--cluster-node-timeout", strconv.FormatInt(opts.NodeTimeout.Milliseconds(), 10),
			"--cluster-require-full-coverage", coverage,
			"--cluster-announce-ip", "127.0.0.1", "--appendonly", "no",
			"--repl-diskless-sync-delay", "0"}, opts.ExtraArgs...)
	}}
	for range 6 {
		c.launchNode(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	out, err := exec.CommandContext(ctx, "redis-cli", append(args, "--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.waitReady(ctx); err != nil {
		t.Fatalf("cluster %v not ready: %v", c.Addrs(), err)
	}
	return c
}

// launchNode starts a node of the cluster, not yet part of it, in a
// directory of its own.
func (c *PrivateCluster) launchNode(t testing.TB) *RedisServer {
	dir := filepath.Join(c.base, "node-"+strconv.Itoa(len(c.nodes)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n := launchRedis(t, dir, "", c.nodeArgs, clusterPort)
	c.nodes = append(c.nodes, n)
	return n
}

// Addrs returns the addresses of all nodes (six, more once grown), dead or
// alive.
func (c *PrivateCluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Masters returns the masters serving hash slots, as a live node sees them,
// ordered by their first slot.
func (c *PrivateCluster) Masters(ctx context.Context) ([]ClusterMaster, error) {
	nodes, err := c.view(ctx)
	if err != nil {
		return nil, err
	}
	var ms []ClusterMaster
	for _, n := range nodes {
		if n.Serves() && len(n.Slots) > 0 {
			ms = append(ms, ClusterMaster{Addr: n.Addr, ID: n.ID, Slots: n.Slots})
		}
	}
	slices.SortFunc(ms, func(a, b ClusterMaster) int { return a.Slots[0].First - b.Slots[0].First })
	return ms, nil
}

// MasterOf returns the address of the master serving hashSlot.
func (c *PrivateCluster) MasterOf(ctx context.Context, hashSlot int) (string, error) {
	ms, err := c.Masters(ctx)
	if err != nil {
		return "", err
	}
	for _, m := range ms {
		if (ClusterNode{Slots: m.Slots}).OwnsSlot(hashSlot) {
			return m.Addr, nil
		}
	}
	return "", fmt.Errorf("no master serves hash slot %d", hashSlot)
}

// node returns the server at addr, nil if none.
func (c *PrivateCluster) node(addr string) *RedisServer {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// view returns CLUSTER NODES as the first live node sees it.
func (c *PrivateCluster) view(ctx context.Context) ([]ClusterNode, error) {
	var last error = errors.New("no live node")
	for _, n := range c.nodes {
		if !n.Alive() {
			continue
		}
		reply, err := nodeCommand(ctx, n.Addr(), func(ctx context.Context, rc *redis.Client) (string, error) {
			return rc.ClusterNodes(ctx).Result()
		})
		if err != nil {
			last = err
			continue
		}
		return parseClusterNodes(reply)
	}
	return nil, last
}

// waitReady waits until every node reports cluster_state:ok, all 16384 slots
// served and all 6 nodes known, and a replica for every master in its view,
// every replica's link to its master is up, and a write to each master is
// acknowledged by its replica (WAIT 1).
func (c *PrivateCluster) waitReady(ctx context.Context) error { return pollUntil(ctx, c.ready) }

// pollUntil calls ready every 50 ms until it returns nil or ctx ends.
func pollUntil(ctx context.Context, ready func(context.Context) error) error {
	var last error
	for {
		if last = ready(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *PrivateCluster) ready(ctx context.Context) error {
	if err := c.nodesReady(ctx); err != nil {
		return err
	}
	masters, err := c.Masters(ctx)
	if err != nil {
		return err
	}
	if len(masters) != 3 {
		return fmt.Errorf("%d masters serve slots, not 3", len(masters))
	}
	for _, m := range masters {
		if err := probeReplication(ctx, m.Addr, probeKeyIn(m)); err != nil {
			return err
		}
	}
	return nil
}

// nodesReady checks that every node reports cluster_state:ok, all 16384
// slots served and every node known, a replica for every master that serves
// slots in its view, and, for a replica, its link to its master up.
func (c *PrivateCluster) nodesReady(ctx context.Context) error {
	known := "cluster_known_nodes:" + strconv.Itoa(len(c.nodes))
	for _, n := range c.nodes {
		var view string
		info, err := nodeCommand(ctx, n.Addr(), func(ctx context.Context, rc *redis.Client) (string, error) {
			ci, err := rc.ClusterInfo(ctx).Result()
			if err != nil {
				return "", err
			}
			if view, err = rc.ClusterNodes(ctx).Result(); err != nil {
				return "", err
			}
			ri, err := rc.Info(ctx, "replication").Result()
			return ci + ri, err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", n.Addr(), err)
		}
		if err := everyMasterReplicated(view); err != nil {
			return fmt.Errorf("%s's view: %w", n.Addr(), err)
		}
		for _, want := range []string{"cluster_state:ok", "cluster_slots_ok:16384", known} {
			if !strings.Contains(info, want+"\r\n") {
				return fmt.Errorf("%s: no %s yet", n.Addr(), want)
			}
		}
		if strings.Contains(info, "role:slave") && !strings.Contains(info, "master_link_status:up") {
			return fmt.Errorf("replica %s: link to its master not up yet", n.Addr())
		}
	}
	return nil
}

// everyMasterReplicated checks a node's CLUSTER NODES: every master that
// serves slots has a replica there (gossip has told this node of it).
func everyMasterReplicated(view string) error {
	nodes, err := parseClusterNodes(view)
	if err != nil {
		return err
	}
	for _, m := range nodes {
		if !m.Serves() || len(m.Slots) == 0 {
			continue
		}
		replicated := false
		for _, r := range nodes {
			replicated = replicated || (r.MasterID == m.ID && !r.Has("fail"))
		}
		if !replicated {
			return fmt.Errorf("master %s has no replica yet", m.Addr)
		}
	}
	return nil
}

// Setting returns the value of the config parameter name (CONFIG GET) on
// the live nodes, an error if they do not all agree.
func (c *PrivateCluster) Setting(ctx context.Context, name string) (string, error) {
	value, from := "", ""
	for _, n := range c.nodes {
		if !n.Alive() {
			continue
		}
		v, err := nodeCommand(ctx, n.Addr(), func(ctx context.Context, rc *redis.Client) (string, error) {
			kv, err := rc.ConfigGet(ctx, name).Result()
			if err != nil {
				return "", err
			}
			v, ok := kv[name]
			if !ok {
				return "", fmt.Errorf("no config parameter %q", name)
			}
			return v, nil
		})
		if err != nil {
			return "", fmt.Errorf("%s: %w", n.Addr(), err)
		}
		if from != "" && v != value {
			return "", fmt.Errorf("%s is %q on %s but %q on %s", name, value, from, v, n.Addr())
		}
		value, from = v, n.Addr()
	}
	if from == "" {
		return "", errors.New("no live node")
	}
	return value, nil
}

// nodeCommand runs fn on a fresh connection to one node.
func nodeCommand(ctx context.Context, addr string, fn func(context.Context, *redis.Client) (string, error)) (string, error) {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer rc.Close()
	return fn(ctx, rc)
}
