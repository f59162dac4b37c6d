package rmq_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A Cluster client that sends its read-only commands to replicas
// (RouteRandomly, which implies ReadOnly; RouteByLatency does the same) is a
// common setting for read scaling. Two processes on such clients share a
// Priority and a FixedTime topic by the Redis coordinator: every message is
// delivered once, on time, a pause holds and a resume releases, and the
// backlog reads empty at the end. What decides ownership and pops runs in
// scripts, which go-redis sends to masters; only reads that may lag (the
// coordinator's views, the dead letters) can reach a replica.
func TestClusterClientReadingFromReplicas(t *testing.T) {
	cluster := testenv.Cluster(t)
	addrs := cluster.Redis.(*redis.ClusterClient).Options().Addrs
	ctx := context.Background()
	replicaReader := func() *redis.ClusterClient {
		r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, RouteRandomly: true})
		t.Cleanup(func() { r.Close() })
		require.NoError(t, r.Ping(ctx).Err())
		return r
	}
	first := replicaReader()
	ns := testenv.Namespace(t, cluster)
	readsBefore := replicaReads(t, first)
	rec := newRecorder()
	var clients []*rmq.Client
	for _, r := range []*redis.ClusterClient{first, replicaReader()} {
		c, err := rmq.New(r, rmq.WithNamespace(ns))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		define(t, c, "p", 8, rmq.Priority)
		define(t, c, "f", 8, rmq.FixedTime)
		require.NoError(t, c.Subscribe("p", rec, rmq.WithThreads(2)))
		require.NoError(t, c.Subscribe("f", rec, rmq.WithThreads(2)))
		run(t, c)
		clients = append(clients, c)
	}
	a, b := clients[0], clients[1]
	require.Eventually(t, func() bool {
		held := 0
		for _, c := range clients {
			for _, m := range c.TopicMetrics() {
				held += m.OwnedSlots
			}
		}
		return held == 16
	}, 15*time.Second, 20*time.Millisecond, "the two processes hold the 16 slots between them")

	const n = 200
	due := time.Now().Add(500 * time.Millisecond)
	for i := range n {
		require.NoError(t, a.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "p%d", i), Priority: int64(17 + i%50)}))
		require.NoError(t, b.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "f", Content: fmt.Appendf(nil, "f%d", i), FixedTime: due}))
	}
	calls := rec.waitCalls(t, 2*n, 15*time.Second)
	seen := make(map[string]int)
	for _, d := range calls {
		seen[d.content]++
		if d.content[0] == 'f' {
			assert.False(t, d.at.Before(due), "%s delivered early", d.content)
		}
	}
	for i := range n {
		assert.Equal(t, 1, seen[fmt.Sprintf("p%d", i)], "p%d", i)
		assert.Equal(t, 1, seen[fmt.Sprintf("f%d", i)], "f%d", i)
	}

	require.NoError(t, a.PauseTopic(ctx, "p"))
	time.Sleep(1500 * time.Millisecond) // every holder has read the pause
	before := len(rec.snapshot())
	for i := range 20 {
		require.NoError(t, b.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "held%d", i), Priority: 20}))
	}
	time.Sleep(time.Second)
	assert.Equal(t, before, len(rec.snapshot()), "a paused topic delivers nothing")
	require.NoError(t, b.ResumeTopic(ctx, "p"))
	rec.waitCalls(t, before+20, 10*time.Second)

	for _, topic := range []string{"p", "f"} {
		require.Eventually(t, func() bool {
			st, err := a.Stats(ctx, topic)
			return err == nil && st.Store == 0 && st.Prepare == 0 && st.Retry == 0
		}, 5*time.Second, 20*time.Millisecond, "topic %s drained", topic)
	}
	assert.Greater(t, replicaReads(t, first), readsBefore, "the clients read from replicas")
}

// replicaReads sums the calls of read-only commands that RMQ makes outside
// its scripts (and that replication never sends) over the Cluster's
// replicas: only clients that read from replicas add to it.
func replicaReads(t *testing.T, r *redis.ClusterClient) int64 {
	t.Helper()
	return replicaCalls(t, r, "hgetall", "mget", "zcard", "exists", "get")
}

// replicaCalls sums the calls of commands cmds (lower case) over the
// Cluster's replicas.
func replicaCalls(t *testing.T, r *redis.ClusterClient, cmds ...string) int64 {
	t.Helper()
	var mu sync.Mutex
	var sum int64
	require.NoError(t, r.ForEachSlave(context.Background(), func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		for line := range strings.Lines(info) {
			for _, cmd := range cmds {
				if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
					calls, _, _ := strings.Cut(rest, ",")
					n, err := strconv.ParseInt(calls, 10, 64)
					if err != nil {
						return err
					}
					mu.Lock()
					sum += n
					mu.Unlock()
				}
			}
		}
		return nil
	}))
	return sum
}
