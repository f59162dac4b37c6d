package testenv

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ClusterUser makes a Redis user named user, password "pw", on every node
// of the Cluster c (masters and replicas), with every permission and then
// rules; it is removed when t ends. It returns the options of a Cluster
// client logged in as the user.
func ClusterUser(t testing.TB, c *redis.ClusterClient, user string, rules ...string) *redis.ClusterOptions {
	t.Helper()
	args := []any{"SETUSER", user, "on", ">pw", "~*", "&*", "+@all"}
	for _, r := range rules {
		args = append(args, r)
	}
	ClusterACL(t, c, args...)
	t.Cleanup(func() { ClusterACL(t, c, "DELUSER", user) })
	o := c.Options()
	return &redis.ClusterOptions{Addrs: o.Addrs, Username: user, Password: "pw"}
}

// ClusterACL runs ACL with args on every node of the Cluster c.
func ClusterACL(t testing.TB, c *redis.ClusterClient, args ...any) {
	t.Helper()
	ctx := context.Background()
	err := c.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		return node.Do(ctx, append([]any{"ACL"}, args...)...).Err()
	})
	if err != nil {
		t.Fatalf("ACL %v: %v", args, err)
	}
}
