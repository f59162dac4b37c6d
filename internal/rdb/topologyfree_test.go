package rdb

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// The topologies shared per Cluster client keep neither the client nor
// themselves: once nothing of RMQ uses a client, its entry goes, and the
// client may be freed (every Cluster client a process gave rmq.New stayed
// in memory for good, with its slot map and node clients: about 150 KB per
// client). While used, one client has one topology.
func TestTopologiesKeepNoClusterClient(t *testing.T) {
	addrs := os.Getenv("RMQ_CLUSTER_ADDRS")
	if addrs == "" {
		testenv.Missing(t, "RMQ_CLUSTER_ADDRS")
	}
	count := func() int {
		n := 0
		topologies.Range(func(_, _ any) bool { n++; return true })
		return n
	}
	before := count()
	ctx := context.Background()
	newClient := func() *redis.ClusterClient {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","),
			// go-redis's maintenance-notification workers outlive Close: off.
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	}
	for range 20 {
		cc := newClient()
		require.NoError(t, cc.Ping(ctx).Err())
		b := New(cc, NewKeyspace("topofree"))
		co := NewCoordination(cc, NewKeyspace("topofree"))
		assert.Same(t, b.(*redisBroker).topo, co.(*coordination).topo, "one topology per client while used")
		b.Close(ctx)
		require.NoError(t, cc.Close())
	}
	deadline := time.Now().Add(5 * time.Second)
	for count() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
	}
	assert.LessOrEqual(t, count(), before, "entries of clients no longer used")
}
