package testenv

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// HookNodes adds to the client of each node of c the hook that newHook makes
// for it, for the nodes c knows now and those it makes later. Every command
// of c reaches Redis through those clients, RMQ's per-master pipelines
// (SendBatch, a group's pops, the idle sweep) among them, which hooks of c
// itself do not see.
func HookNodes(t testing.TB, c *redis.ClusterClient, newHook func(node *redis.Client) redis.Hook) {
	t.Helper()
	c.OnNewNode(func(n *redis.Client) { n.AddHook(newHook(n)) })
	err := c.ForEachShard(context.Background(), func(_ context.Context, n *redis.Client) error {
		n.AddHook(newHook(n))
		return nil
	})
	if err != nil {
		t.Fatalf("hook the Cluster's nodes: %v", err)
	}
}
