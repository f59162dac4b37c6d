package testenv

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
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

// replicasListed checks that the node at addr lists a replica beside the
// master of every slot range in its CLUSTER SLOTS. A node lists a replica
// only once it has heard of the replica's replication offset, a gossip round
// after the replica's first acknowledgement; a Cluster client that loads its
// slot map from a node before then reads from the masters alone until its
// next reload.
func replicasListed(ctx context.Context, addr string) error {
	_, err := nodeCommand(ctx, addr, func(ctx context.Context, rc *redis.Client) (string, error) {
		ranges, err := rc.ClusterSlots(ctx).Result()
		if err != nil {
			return "", err
		}
		for _, r := range ranges {
			if len(r.Nodes) < 2 {
				return "", fmt.Errorf("hash slots %d-%d: no replica listed", r.Start, r.End)
			}
		}
		return "", nil
	})
	if err != nil {
		return fmt.Errorf("%s: CLUSTER SLOTS: %w", addr, err)
	}
	return nil
}

// WaitReplicasListed waits until every node lists a replica beside each
// master in its CLUSTER SLOTS (about a second after StartCluster returns),
// or ctx ends: from then on, a client that reads from replicas and loads
// its slot map from any node sends reads to them.
func (c *PrivateCluster) WaitReplicasListed(ctx context.Context) error {
	return pollUntil(ctx, func(ctx context.Context) error {
		for _, n := range c.nodes {
			if err := replicasListed(ctx, n.Addr()); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReplicaCalls sums, over the replicas in c's slot map, the calls Redis
// counted (INFO commandstats) of the commands cmds, in lower case. Only a
// client that reads from replicas makes them; replication itself runs the
// writes there, so count read-only commands. It fails t if a replica does
// not answer.
func ReplicaCalls(t testing.TB, c *redis.ClusterClient, cmds ...string) int64 {
	t.Helper()
	var sum atomic.Int64
	err := c.ForEachSlave(context.Background(), func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		for line := range strings.Lines(info) {
			for _, cmd := range cmds {
				if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
					calls, _, _ := strings.Cut(rest, ",")
					v, err := strconv.ParseInt(calls, 10, 64)
					if err != nil {
						return err
					}
					sum.Add(v)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("replicas' commandstats: %v", err)
	}
	return sum.Load()
}
