package failover_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestClusterMasterFailover kills a master of a private Redis Cluster under
// load: one that holds topic slots but not the coordinator's keys, one that
// holds the coordinator's keys (and topic slots), and the first again with
// the producer's Sends acknowledged by a replica, all on clusters that serve
// the surviving masters' slots meanwhile (cluster-require-full-coverage no);
// the second with clients that read from replicas; and the first on Redis's
// default, cluster-require-full-coverage yes, where
// the surviving masters' rate is reported, not checked.
func TestClusterMasterFailover(t *testing.T) {
	for _, tc := range []struct {
		name         string
		coordinator  bool // kill the master of the coordinator's keys
		fullCoverage bool // cluster-require-full-coverage yes
		v            variant
	}{
		{"data-master", false, false, variant{}},
		{"coordinator-master", true, false, variant{}},
		{"data-master-replica-ack", false, false, variant{replicaAck: true}},
		{"coordinator-master-replica-reads", true, false, variant{replicaReads: true}},
		{"data-master-full-coverage", false, true, variant{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testenv.StartCluster(t, testenv.ClusterOptions{PartialCoverage: !tc.fullCoverage})
			runClusterFailover(t, c, tc.coordinator, tc.v)
		})
	}
}

func runClusterFailover(t *testing.T, c *testenv.PrivateCluster, coordinator bool, v variant) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	masters, err := c.Masters(ctx)
	require.NoError(t, err)
	require.Len(t, masters, 3)
	coverage, err := c.Setting(ctx, "cluster-require-full-coverage")
	require.NoError(t, err)
	nodeTimeout, err := c.Setting(ctx, "cluster-node-timeout")
	require.NoError(t, err)
	if v.replicaReads {
		// A client that loads its slot map before the nodes list the
		// replicas reads from the masters alone until its next reload.
		require.NoError(t, c.WaitReplicasListed(ctx))
	}
	masterOf := func(key string) string {
		slot := testenv.KeySlot(key)
		for _, m := range masters {
			if (testenv.ClusterNode{Slots: m.Slots}).OwnsSlot(slot) {
				return m.Addr
			}
		}
		t.Fatalf("no master serves hash slot %d of %q", slot, key)
		return ""
	}

	d := deployment{
		name: fmt.Sprintf("Redis Cluster %v (cluster-require-full-coverage %s, cluster-node-timeout %s ms)",
			c.Addrs(), coverage, nodeTimeout),
		newClient: func() redis.UniversalClient {
			return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), RouteRandomly: v.replicaReads})
		},
		refusesUncovered: coverage == "yes",
	}
	held := map[string][]int{} // master → topic slots
	for i := range topicSlots {
		// A slot's keys are "<ns>:{<topic>:<i>}:…" (internal/rdb/keys.go).
		d.slotMaster[i] = masterOf(topicName + ":" + strconv.Itoa(i))
		held[d.slotMaster[i]] = append(held[d.slotMaster[i]], i)
	}
	// A namespace whose coordinator keys ("<ns>:{<ns>}:…") and topic list
	// ("<ns>:topics") share a master that holds topic slots too.
	var ns, coordMaster string
	for range 1000 {
		ns = newNamespace()
		coordMaster = masterOf(ns)
		if masterOf(ns+":topics") == coordMaster && len(held[coordMaster]) > 0 {
			break
		}
	}
	require.NotEmpty(t, held[coordMaster], "no namespace whose keys share a master with topic slots")
	d.victim = coordMaster
	if !coordinator {
		d.victim = ""
		for _, m := range masters {
			if m.Addr != coordMaster && len(held[m.Addr]) > len(held[d.victim]) {
				d.victim = m.Addr
			}
		}
		require.NotEmpty(t, d.victim, "no master other than the coordinator's holds topic slots")
	}
	for _, m := range masters {
		if m.Addr != d.victim {
			d.stateNodes = append(d.stateNodes, m.Addr)
		}
		role := ""
		if m.Addr == coordMaster {
			role = ", the coordinator's keys and the topic list"
		}
		if m.Addr == d.victim {
			role += " — KILLED"
		}
		d.notes = append(d.notes, fmt.Sprintf("master %s: hash slots %v, topic slots %v%s", m.Addr, m.Slots, held[m.Addr], role))
	}
	slices.Sort(d.notes)
	d.kill = func(t testing.TB) { c.Kill(t, d.victim) }
	d.promotion = func(ctx context.Context) (time.Time, string, error) { return c.WaitPromotion(ctx, d.victim) }
	d.rejoin = func(t testing.TB, _ string) { c.Restart(t, d.victim) } // its nodes config makes it a replica
	runFailover(t, ns, d, v)
}
