package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis Cluster of the cluster scenario is started and stopped by
// scripts/bench.sh (--cluster); this file reads its nodes' statistics and
// resets them between runs, as redisproc.go does for the single server.

// newClusterRedis returns a fresh go-redis cluster client on the nodes, with
// the options newRedis gives a single-node client (PoolSize is per node).
func newClusterRedis(addrs []string) *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:        addrs,
		PoolSize:     256,
		ReadTimeout:  10 * time.Second,
		WriteTimeout: 10 * time.Second,
	})
}

// clusterNode is an admin connection to one node of the cluster.
type clusterNode struct {
	addr   string
	r      *redis.Client
	master bool // as of the last reset
}

// clusterNodes are admin connections to every node, never handed to a
// system under test.
type clusterNodes struct {
	nodes []*clusterNode
}

// openCluster connects to every node and checks that the cluster is healthy.
func openCluster(ctx context.Context, addrs []string) (*clusterNodes, error) {
	c := &clusterNodes{}
	for _, a := range addrs {
		c.nodes = append(c.nodes, &clusterNode{addr: a, r: newRedis(a)})
	}
	for _, n := range c.nodes {
		st, err := info(ctx, n.r, "cluster")
		if err == nil && st["cluster_enabled"] != "1" {
			err = errors.New("cluster_enabled is not 1")
		}
		if err != nil {
			c.close()
			return nil, fmt.Errorf("cluster node %s: %w", n.addr, err)
		}
	}
	if err := c.refreshRoles(ctx); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *clusterNodes) close() {
	for _, n := range c.nodes {
		n.r.Close()
	}
}

// refreshRoles reads each node's role (INFO replication).
func (c *clusterNodes) refreshRoles(ctx context.Context) error {
	for _, n := range c.nodes {
		m, err := info(ctx, n.r, "replication")
		if err != nil {
			return fmt.Errorf("cluster node %s: %w", n.addr, err)
		}
		n.master = m["role"] == "master"
	}
	return nil
}

// masters counts the nodes that were masters at the last reset.
func (c *clusterNodes) masters() int {
	k := 0
	for _, n := range c.nodes {
		if n.master {
			k++
		}
	}
	return k
}

// reset empties the cluster (FLUSHALL on every master, then waits until every
// replica is empty too), has every node give its freed memory back (MEMORY
// PURGE), and resets every node's statistics (CONFIG RESETSTAT), so that
// each cluster run starts clean, as a single node's does.
func (c *clusterNodes) reset(ctx context.Context) error {
	if err := c.refreshRoles(ctx); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if n.master {
			if err := n.r.FlushAll(ctx).Err(); err != nil {
				return fmt.Errorf("FLUSHALL on %s: %w", n.addr, err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range c.nodes {
		for {
			size, err := n.r.DBSize(ctx).Result()
			if err != nil {
				return fmt.Errorf("DBSIZE on %s: %w", n.addr, err)
			}
			if size == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("replica %s still holds %d keys 10 s after FLUSHALL", n.addr, size)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, n := range c.nodes {
		if err := n.r.Do(ctx, "MEMORY", "PURGE").Err(); err != nil {
			return fmt.Errorf("MEMORY PURGE on %s: %w", n.addr, err)
		}
		if err := n.r.ConfigResetStat(ctx).Err(); err != nil {
			return fmt.Errorf("CONFIG RESETSTAT on %s: %w", n.addr, err)
		}
	}
	return nil
}

// cpu returns the CPU seconds (used_cpu_user + used_cpu_sys) of every node
// summed, and of the masters alone.
func (c *clusterNodes) cpu(ctx context.Context) (all, masters float64, err error) {
	for _, n := range c.nodes {
		v, err := redisCPU(ctx, n.r)
		if err != nil {
			return 0, 0, fmt.Errorf("cluster node %s: %w", n.addr, err)
		}
		all += v
		if n.master {
			masters += v
		}
	}
	return all, masters, nil
}

// commandStats returns INFO commandstats summed over every node.
func (c *clusterNodes) commandStats(ctx context.Context) (map[string]cmdStat, error) {
	sum := make(map[string]cmdStat)
	for _, n := range c.nodes {
		st, err := commandStats(ctx, n.r)
		if err != nil {
			return nil, fmt.Errorf("cluster node %s: %w", n.addr, err)
		}
		for k, v := range st {
			s := sum[k]
			s.Calls += v.Calls
			s.Usec += v.Usec
			sum[k] = s
		}
	}
	return sum, nil
}

// describe is the header line of the cluster: its nodes and roles.
func (c *clusterNodes) describe(ctx context.Context) string {
	if err := c.refreshRoles(ctx); err != nil {
		return err.Error()
	}
	return strconv.Itoa(len(c.nodes)) + " nodes on loopback, " + strconv.Itoa(c.masters()) + " masters (" +
		c.nodes[0].addr + " …), cluster-node-timeout 2000, no persistence"
}
