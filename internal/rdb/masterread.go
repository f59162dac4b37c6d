package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Reads on the master. A client may send its reads to replicas (a Cluster
// client with ReadOnly, RouteRandomly or RouteByLatency, a Sentinel client
// routed to replicas), which lag by the replication delay, and for as long
// as a partition lasts when cut off from their master. The reads whose
// staleness would change what a client does go to the master: a topic's
// definition (one just defined by another process must not read as unknown,
// nor a definer's read-back fail), the flow controls (a pause must hold),
// the topics each process consumes (DeleteTopic's refusal), and the Redis
// coordinator's views of the workers and the assignments (a worker takes
// what it reads as the assignment of the epoch it was told of, and the
// leader what it reads as the membership of its version: a stale read would
// hold a rebalance back until the next change). Hashes are read by a script
// (lua/hashread.lua), which go-redis always sends to the master; other reads
// by a routed pipeline on the master's own connections (RoutedPipeline). The
// reads that only report go there too (the dead letters, the breakers'
// shared state, the counts): while a slot migrates, the old master's replica
// answers "no such key" for a key already moved.

// hashOnMaster returns every field of the hash at key, read on its master.
func hashOnMaster(ctx context.Context, rdb redis.Scripter, key string) (map[string]string, error) {
	flat, err := hashReadScript.Run(ctx, rdb, []string{key}).StringSlice()
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		m[flat[i]] = flat[i+1]
	}
	return m, nil
}

// fieldOnMaster returns field of the hash at key, read on its master;
// redis.Nil if the hash has no such field.
func fieldOnMaster(ctx context.Context, rdb redis.Scripter, key, field string) (string, error) {
	return hashReadScript.Run(ctx, rdb, []string{key}, field).Text()
}
