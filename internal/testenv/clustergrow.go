package testenv

import (
	"context"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Grow adds a master and its replica to the cluster, as a team grows a
// Cluster: redis-cli --cluster add-node, the replica's with --cluster-slave,
// each once every node knows the nodes before and reports cluster_state:ok;
// then it waits until the replica's link to its master is up too. The new master serves no hash slot
// until some move to it (Rebalance). It returns the new master.
func (c *PrivateCluster) Grow(t testing.TB) ClusterMaster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	masters, err := c.Masters(ctx)
	if err != nil {
		t.Fatalf("grow: %v", err)
	}
	entry := masters[0].Addr
	m := c.launchNode(t)
	if err := redisCLI(ctx, "--cluster", "add-node", m.Addr(), entry); err != nil {
		t.Fatalf("grow: %v", err)
	}
	if err := pollUntil(ctx, c.nodesReady); err != nil { // redis-cli refuses to add a node before they agree
		t.Fatalf("grow: %s not joined: %v", m.Addr(), err)
	}
	id, err := nodeCommand(ctx, m.Addr(), func(ctx context.Context, rc *redis.Client) (string, error) {
		return rc.Do(ctx, "CLUSTER", "MYID").Text()
	})
	if err != nil {
		t.Fatalf("grow: CLUSTER MYID: %v", err)
	}
	r := c.launchNode(t)
	if err := redisCLI(ctx, "--cluster", "add-node", r.Addr(), entry, "--cluster-slave", "--cluster-master-id", id); err != nil {
		t.Fatalf("grow: %v", err)
	}
	if err := pollUntil(ctx, c.nodesReady); err != nil {
		t.Fatalf("grow: %s and its replica %s not joined: %v", m.Addr(), r.Addr(), err)
	}
	return ClusterMaster{Addr: m.Addr(), ID: id}
}

// Rebalance moves hash slots, keys and all, until every master serves its
// share, those serving none included: redis-cli --cluster rebalance
// --cluster-use-empty-masters.
func (c *PrivateCluster) Rebalance(ctx context.Context) error {
	masters, err := c.Masters(ctx)
	if err != nil {
		return err
	}
	return redisCLI(ctx, "--cluster", "rebalance", masters[0].Addr, "--cluster-use-empty-masters")
}

// redisCLI runs redis-cli with args; its output is in the error if it fails.
func redisCLI(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput()
	if err != nil {
		if len(out) > 2000 {
			out = out[len(out)-2000:]
		}
		return fmt.Errorf("redis-cli %v: %w\n%s", args, err, out)
	}
	return nil
}

// Shrink empties the master m (redis-cli --cluster rebalance with its weight
// 0: its hash slots move to the others, keys and all) and removes it and its
// replicas from the cluster (redis-cli --cluster del-node, which shuts each
// down), as a team shrinks a Cluster.
func (c *PrivateCluster) Shrink(ctx context.Context, m ClusterMaster) error {
	nodes, err := c.view(ctx)
	if err != nil {
		return err
	}
	var entry string
	var replicas []string // their IDs
	for _, n := range nodes {
		switch {
		case n.MasterID == m.ID:
			replicas = append(replicas, n.ID)
		case n.ID != m.ID && n.Serves() && entry == "":
			entry = n.Addr
		}
	}
	if entry == "" {
		return fmt.Errorf("shrink: no other master than %s", m.Addr)
	}
	if err := redisCLI(ctx, "--cluster", "rebalance", entry, "--cluster-weight", m.ID+"=0"); err != nil {
		return err
	}
	for _, id := range append(replicas, m.ID) {
		if err := redisCLI(ctx, "--cluster", "del-node", entry, id); err != nil {
			return err
		}
	}
	return nil
}
