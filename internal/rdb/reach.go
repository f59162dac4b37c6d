package rdb

import (
	"context"
)

// PingNode implements Broker: a PING to the Cluster master serving the slot
// of keys, through the client's own connection to it (so through whatever
// path its data takes), by the client's slot map as it stands. On a single
// node it pings the node and names it "". A failed PING asks for a reload of
// the slot map (at most every 200 ms): a master frozen or cut off may have
// been failed over, and a process whose slots there are all parked makes no
// other call that would find out.
func (b *redisBroker) PingNode(ctx context.Context, keys SlotKeys) (string, error) {
	if b.topo == nil {
		return "", b.rdb.Ping(ctx).Err()
	}
	node, err := b.topo.client.MasterForKey(ctx, keys.Store)
	if err != nil {
		b.topo.failed(err)
		return "", err
	}
	if err := node.Ping(ctx).Err(); err != nil {
		b.topo.failed(err)
		return node.Options().Addr, err
	}
	return node.Options().Addr, nil
}
