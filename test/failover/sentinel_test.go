package failover_test

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestSentinelFailover kills the master of a private Sentinel deployment
// under load, with and without the producer's Sends acknowledged by the
// replica.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    variant
	}{
		{"master", variant{}},
		{"master-replica-ack", variant{replicaAck: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			runSentinelFailover(t, tc.v)
		})
	}
}

func runSentinelFailover(t *testing.T, v variant) {
	s := testenv.StartSentinel(t, testenv.SentinelOptions{})
	d := deployment{
		name: "Sentinel " + fmt.Sprint(s.SentinelAddrs()),
		newClient: func() redis.UniversalClient {
			return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: s.MasterName(), SentinelAddrs: s.SentinelAddrs()})
		},
		victim:    s.MasterAddr(),
		kill:      s.KillMaster,
		promotion: s.WaitPromotion,
		rejoin:    s.RestartMasterAsReplica,
		notes:     []string{fmt.Sprintf("master %s (KILLED), replica %s", s.MasterAddr(), s.ReplicaAddr())},
	}
	for i := range d.slotMaster {
		d.slotMaster[i] = s.MasterAddr()
	}
	runFailover(t, newNamespace(), d, v)
}
