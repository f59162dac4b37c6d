package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// publishAt publishes payload on channel; on a Cluster through the master of
// key, one the caller must reach anyway. go-redis sends a PUBLISH, which
// names no key, to a node of its own choosing, and retries it there: a node
// out of this process's reach would hold the call for MaxRetries+1 read
// timeouts (about 12 s by default), where any node would have carried the
// message to every other over the cluster bus. When the slot map cannot
// name key's master, go-redis chooses.
func publishAt(ctx context.Context, client redis.UniversalClient, key, channel string, payload any) error {
	if cc, ok := client.(*redis.ClusterClient); ok {
		if node, err := cc.MasterForKey(ctx, key); err == nil {
			err := node.Publish(ctx, channel, payload).Err()
			topologyOf(cc).failed(err)
			return err
		}
	}
	return client.Publish(ctx, channel, payload).Err()
}
