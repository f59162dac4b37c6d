package main

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// The Cluster's in-flight yardstick: the produce scenario's raw ZADDs (same
// members, keys and scores as the bare yardstick) with never more than the
// senders' count unanswered, written by the leanest client there is, on the
// Cluster and on the single server in the same round. On the Cluster each
// member goes to the master of its key's hash slot, over one connection per
// master; each write sends whatever replies have freed, one write per
// master. In waves, the writer waits until every command in flight is
// answered, so that each write carries them all: the fewest writes, reads
// and wake-ups per message any client can have with that many in flight.
// What this client reaches on the Cluster, as a share of what it reaches on
// the single server, bounds what Send can reach as such a share.

// rawClusterName names a yardstick shape on the Cluster or the single server.
func rawClusterName(onCluster, waves bool, g int) string {
	where, shape := "single node", fmt.Sprintf("%d in flight", g)
	if onCluster {
		where = "Cluster, a connection per master"
	}
	if waves {
		shape = fmt.Sprintf("waves of %d", g)
	}
	return "raw ZADD, " + where + ", full duplex, " + shape
}

// produceRawDuplex runs the yardstick where e says (the Cluster for a
// cluster run), in waves or not.
func produceRawDuplex(waves bool) runFunc {
	return func(ctx context.Context, e *env) (metrics, error) {
		g := e.produceGoroutines
		if !e.onCluster {
			return produceZAdds("raw ZADD", func(ctx context.Context, addr string, pl [][]byte) error {
				return zaddDuplex(ctx, []string{addr}, nil, pl, g, waves)
			})(ctx, e)
		}
		cc := newClusterRedis(e.clusterAddrs)
		defer cc.Close()
		pl := payloads(e.n, "p")
		addrs, route, err := routeByMaster(ctx, cc, pl)
		if err != nil {
			return nil, err
		}
		m := metrics{}
		meter := startMeter(ctx, e)
		if err := zaddDuplex(ctx, addrs, route, pl, g, waves); err != nil {
			return nil, err
		}
		if err := meter.stop(ctx, e.n, m); err != nil {
			return nil, err
		}
		if got, err := bareCount(ctx, cc); err != nil || got != int64(e.n) {
			return nil, fmt.Errorf("raw ZADD on the Cluster stored %d of %d (%v)", got, e.n, err)
		}
		return m, nil
	}
}

// routeByMaster returns the Cluster's masters that serve the bare keys of
// pl, and for each member the index of its key's master.
func routeByMaster(ctx context.Context, cc *redis.ClusterClient, pl [][]byte) ([]string, []int, error) {
	var addrs []string
	index := make(map[string]int) // master address → its index in addrs
	byKey := make(map[string]int) // bare key → its master's index
	route := make([]int, len(pl))
	for i, p := range pl {
		key := bareKey(p)
		c, ok := byKey[key]
		if !ok {
			node, err := cc.MasterForKey(ctx, key)
			if err != nil {
				return nil, nil, fmt.Errorf("master of %s: %w", key, err)
			}
			addr := node.Options().Addr
			if c, ok = index[addr]; !ok {
				c = len(addrs)
				index[addr] = c
				addrs = append(addrs, addr)
			}
			byKey[key] = c
		}
		route[i] = c
	}
	return addrs, route, nil
}
