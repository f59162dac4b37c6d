package testenv

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// replicationProbeKey is the prefix of the keys the readiness waits write to
// see a master's writes reach its replica. They expire after a minute.
const replicationProbeKey = "testenv:replication-probe:"

// replicationProbeWait is the timeout of the WAIT after a probe write.
const replicationProbeWait = 2 * time.Second

// probeReplication writes key on the master at addr and, on the same
// connection, waits with WAIT 1 for a replica to acknowledge the write. It
// returns an error unless one did within replicationProbeWait: a replica's
// link may be up before its acknowledgements reach the master.
func probeReplication(ctx context.Context, addr, key string) error {
	_, err := nodeCommand(ctx, addr, func(ctx context.Context, rc *redis.Client) (string, error) {
		// Pipeliner has no Wait; the client's 3 s read timeout outlasts
		// the WAIT's.
		var wait *redis.Cmd
		if _, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, "1", time.Minute)
			wait = p.Do(ctx, "WAIT", 1, replicationProbeWait.Milliseconds())
			return nil
		}); err != nil {
			return "", err
		}
		acked, err := wait.Int64()
		if err != nil {
			return "", err
		}
		if acked < 1 {
			return "", fmt.Errorf("%d of 1 replicas acknowledged a write within %v", acked, replicationProbeWait)
		}
		return "", nil
	})
	if err != nil {
		return fmt.Errorf("master %s: replication probe: %w", addr, err)
	}
	return nil
}

// probeKeyIn returns a replication probe key that hashes to one of the
// slots of m, which must serve some.
func probeKeyIn(m ClusterMaster) string {
	for i := 0; ; i++ {
		key := replicationProbeKey + strconv.Itoa(i)
		if (ClusterNode{Slots: m.Slots}).OwnsSlot(KeySlot(key)) {
			return key
		}
	}
}
