package testenv

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Kill ends the node at addr with SIGKILL and waits until its process is
// gone. A master's slots and replica are noted first, for WaitPromotion.
func (c *PrivateCluster) Kill(t testing.TB, addr string) {
	t.Helper()
	n := c.node(addr)
	if n == nil {
		t.Fatalf("kill %s: not a node of the cluster %v", addr, c.Addrs())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nodes, err := c.view(ctx)
	if err != nil {
		t.Fatalf("kill %s: %v", addr, err)
	}
	for _, m := range nodes {
		if m.Addr != addr || !m.Serves() {
			continue
		}
		k := killedMaster{ClusterMaster: ClusterMaster{Addr: m.Addr, ID: m.ID, Slots: m.Slots}}
		for _, r := range nodes {
			if r.MasterID == m.ID && !r.Has("fail") {
				k.replica = r.Addr
			}
		}
		c.mu.Lock()
		c.killed[addr] = k
		c.mu.Unlock()
	}
	n.Kill(t)
}

// Restart starts the node at addr again, killed with Kill, on its port and
// directory: with its nodes config kept it rejoins the cluster, a dead
// master as a replica of the replica that took its slots.
func (c *PrivateCluster) Restart(t testing.TB, addr string) {
	t.Helper()
	n := c.node(addr)
	if n == nil {
		t.Fatalf("restart %s: not a node of the cluster %v", addr, c.Addrs())
	}
	n.Restart(t)
}

// WaitPromotion waits until the replica of deadAddr, a master killed with
// Kill, is a master serving all of the dead master's slots, polling CLUSTER
// NODES on that replica every 20 ms. It returns when that was first seen and
// the replica's address.
func (c *PrivateCluster) WaitPromotion(ctx context.Context, deadAddr string) (time.Time, string, error) {
	c.mu.Lock()
	k, ok := c.killed[deadAddr]
	c.mu.Unlock()
	if !ok {
		return time.Time{}, "", fmt.Errorf("%s is not a master killed with Kill", deadAddr)
	}
	if k.replica == "" {
		return time.Time{}, "", fmt.Errorf("master %s had no replica at its kill", deadAddr)
	}
	rc := redis.NewClient(&redis.Options{Addr: k.replica, MaxRetries: -1, DialTimeout: time.Second})
	defer rc.Close()
	last := errors.New("no reply yet")
	for {
		if reply, err := rc.ClusterNodes(ctx).Result(); err != nil {
			last = err
		} else if nodes, err := parseClusterNodes(reply); err != nil {
			last = err
		} else {
			for _, n := range nodes {
				if n.Addr == k.replica {
					if n.Serves() && n.Owns(k.Slots) {
						return time.Now(), k.replica, nil
					}
					last = fmt.Errorf("replica %s: flags %v, slots %v", n.Addr, n.Flags, n.Slots)
				}
			}
		}
		select {
		case <-ctx.Done():
			return time.Time{}, "", fmt.Errorf("promotion of %s's replica %s: %w (last: %v)", deadAddr, k.replica, ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ReplicaOf returns the address of a live replica of the master at addr.
func (c *PrivateCluster) ReplicaOf(ctx context.Context, addr string) (string, error) {
	nodes, err := c.view(ctx)
	if err != nil {
		return "", err
	}
	id := ""
	for _, n := range nodes {
		if n.Addr == addr {
			id = n.ID
		}
	}
	for _, n := range nodes {
		if id != "" && n.MasterID == id && !n.Has("fail") && !n.Has("fail?") {
			return n.Addr, nil
		}
	}
	return "", fmt.Errorf("no live replica of %s", addr)
}

// Freeze stops the node at addr with SIGSTOP and returns the function that
// resumes it (SIGCONT), also called when t ends.
func (c *PrivateCluster) Freeze(t testing.TB, addr string) (thaw func()) {
	t.Helper()
	n := c.node(addr)
	if n == nil {
		t.Fatalf("freeze %s: not a node of the cluster %v", addr, c.Addrs())
	}
	if err := syscall.Kill(n.PID(), syscall.SIGSTOP); err != nil {
		t.Fatalf("freeze %s: %v", addr, err)
	}
	var once sync.Once
	thaw = func() { once.Do(func() { _ = syscall.Kill(n.PID(), syscall.SIGCONT) }) }
	t.Cleanup(thaw)
	return thaw
}
