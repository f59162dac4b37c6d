package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// An admin command on a Cluster with one master frozen (SIGSTOP), not the
// one of the namespace's keys, still connects and answers: its check pings
// the namespace's master, where go-redis would send a PING, which names no
// key, to a node of its choosing, and fail at the check's 5 s. The seeds
// leave the frozen node out, as an operator would once it stopped
// answering.
func TestAdminConnectsPastAFrozenMaster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	direct := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { direct.Close() })
	const ns = "frozen"
	c, err := rmq.New(direct, rmq.WithNamespace(ns))
	require.NoError(t, err)
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "orders", SlotAmount: 8, Type: rmq.Priority}))
	require.NoError(t, c.Close(ctx))

	home := testenv.MasterOf(t, direct, "{"+ns+"}")
	masters, err := cl.Masters(ctx)
	require.NoError(t, err)
	frozen := ""
	for _, m := range masters {
		if m.Addr != home {
			frozen = m.Addr
		}
	}
	require.NotEmpty(t, frozen)
	var seeds []string
	for _, a := range cl.Addrs() {
		if a != frozen {
			seeds = append(seeds, a)
		}
	}
	cl.Freeze(t, frozen)
	// Each check on a fresh client, as each command makes one: go-redis
	// would send a plain PING to one of the nodes at random.
	for i := range 12 {
		r, err := newRedis(seeds, true)
		require.NoError(t, err)
		start := time.Now()
		err = ping(ctx, r, seeds, namespaceKey(ns))
		r.Close()
		require.NoError(t, err, "check %d", i)
		assert.Less(t, time.Since(start), time.Second, "check %d waited for the frozen master", i)
	}
	// go-redis's first script call on a fresh Cluster client asks a node
	// at random for its command table, and moves on from a frozen one
	// after 5 s: the command answers, if not always at once.
	out := mustRun(t, "", "topics", "-cluster", "-redis="+strings.Join(seeds, ","), "-namespace", ns)
	assert.Contains(t, out, "orders")
}
