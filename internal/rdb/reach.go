package rdb

import (
	"context"
)

// PingNode implements Broker: a PING to the Cluster master serving the slot
// of keys, through the client's own connection to it (so through whatever
// path its data takes), by the client's slot map as it stands. On a single
// node it pings the node and names it "".
func (b *redisBroker) PingNode(ctx context.Context, keys SlotKeys) (string, error) {
	if b.topo == nil {
		return "", b.rdb.Ping(ctx).Err()
	}
	node, err := b.topo.client.MasterForKey(ctx, keys.Store)
	if err != nil {
		return "", err
	}
	return node.Options().Addr, node.Ping(ctx).Err()
}
