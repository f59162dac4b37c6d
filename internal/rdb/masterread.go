package rdb

import "context"

// Reads on the master. A client may send its reads to replicas (a Cluster
// client with ReadOnly, RouteRandomly or RouteByLatency, a Sentinel client
// routed to replicas), which lag by the replication delay, and for as long
// as a partition lasts when cut off from their master. The reads whose
// staleness would change what a client does run in a script, which goes to
// the master: a topic's definition (one just defined by another process
// must not read as unknown, nor a definer's read-back fail), the flow
// controls (a pause must hold) and the topics each process consumes
// (DeleteTopic's refusal). Most other reads go by routed pipelines
// (RoutedPipeline), on the masters' own connections, anyway; those that
// only report (the dead letters, the breakers' shared state) or only delay
// (the Redis coordinator's views) may come from a replica.

// hashOnMaster returns every field of the hash at key, read on its master.
func (b *redisBroker) hashOnMaster(ctx context.Context, key string) (map[string]string, error) {
	flat, err := hashReadScript.Run(ctx, b.rdb, []string{key}).StringSlice()
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
func (b *redisBroker) fieldOnMaster(ctx context.Context, key, field string) (string, error) {
	return hashReadScript.Run(ctx, b.rdb, []string{key}, field).Text()
}
