package rmq_test

import (
	"context"
	"fmt"
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
// scripts, which go-redis sends to masters, and so do the reads whose
// staleness would change what a process does (masterread.go): none of the
// processes' reads reaches a replica, while a plain read of the same client
// does.
func TestClusterClientReadingFromReplicas(t *testing.T) {
	cluster := testenv.Cluster(t)
	ctx := context.Background()
	first := replicaReader(t, cluster)
	ns := testenv.Namespace(t, cluster)
	readsBefore := replicaReads(t, first)
	rec := newRecorder()
	var clients []*rmq.Client
	for _, r := range []*redis.ClusterClient{first, replicaReader(t, cluster)} {
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
	dues := make(map[string]time.Time, n)
	for i := range n {
		require.NoError(t, a.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "p%d", i), Priority: int64(17 + i%50)}))
		content := fmt.Sprintf("f%d", i)
		// All due at once, unless the Sends outlast the margin on a slow
		// machine: then the later ones come due later, never in the past.
		at := due
		if soon := time.Now().Add(50 * time.Millisecond); at.Before(soon) {
			at = soon
		}
		dues[content] = at
		require.NoError(t, b.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "f", Content: []byte(content), FixedTime: at}))
	}
	calls := rec.waitCalls(t, 2*n, 15*time.Second)
	seen := make(map[string]int)
	for _, d := range calls {
		seen[d.content]++
		if d.content[0] == 'f' {
			assert.False(t, d.at.Before(dues[d.content]), "%s delivered early", d.content)
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
	assert.Equal(t, readsBefore, replicaReads(t, first), "RMQ's reads reached a replica")
	assertReadsReplicas(t, first, ns)
}

// Reads whose staleness would change what RMQ does go to the masters even
// on a client that sends its reads to replicas, which lag by the
// replication delay and, cut off from their master, for as long as that
// lasts: a topic's definition (one just defined by another process must not
// read as unknown), the flow controls (a pause must hold), the topics each
// process consumes (DeleteTopic's refusal). The reports go there too (the
// dead letters, the breakers shared). While such a client makes each of
// those reads, the replicas serve none of RMQ's reads (replicaReads); a
// plain HGET of the same client reaches them.
func TestClusterClientReadsWhatDecidesOnMasters(t *testing.T) {
	cluster := testenv.Cluster(t)
	ctx := context.Background()
	r := replicaReader(t, cluster)
	ns := testenv.Namespace(t, cluster)
	owner, err := rmq.New(cluster.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = owner.Close(context.Background()) })
	define(t, owner, "busy", 4, rmq.Priority)
	define(t, owner, "paused", 4, rmq.FixedTime)
	require.NoError(t, owner.PauseTopic(ctx, "paused"))
	require.NoError(t, owner.Subscribe("busy", newRecorder()))
	run(t, owner)
	require.Eventually(t, func() bool {
		ws, err := owner.Workers(ctx)
		return err == nil && len(ws) == 1 && ws[0].Topics["busy"] > 0
	}, 10*time.Second, 20*time.Millisecond, "the owner's presence")

	deciding := replicaReads(t, r)
	for range 20 {
		c, err := rmq.New(r, rmq.WithNamespace(ns)) // a new process: no definition cached
		require.NoError(t, err)
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "busy", Content: []byte("m"), Priority: 100}))
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "paused", SlotAmount: 4, Type: rmq.FixedTime}),
			"defined before: read back")
		flows, err := c.FlowControls(ctx)
		require.NoError(t, err)
		require.True(t, flows["paused"].Paused)
		topics, err := c.Topics(ctx)
		require.NoError(t, err)
		require.Len(t, topics, 2)
		require.ErrorIs(t, c.DeleteTopic(ctx, "busy"), rmq.ErrTopicInUse)
		dead, err := c.DeadMessages(ctx, "busy", 10)
		require.NoError(t, err)
		require.Empty(t, dead)
		open, err := c.OpenBreakers(ctx, "busy")
		require.NoError(t, err)
		require.Empty(t, open)
		require.NoError(t, c.Close(ctx))
	}
	assert.Equal(t, deciding, replicaReads(t, r), "RMQ's reads reached a replica")
	assertReadsReplicas(t, r, ns)
}

// assertReadsReplicas checks that r sends a plain read to replicas: some of
// 50 HGETs reach them.
func assertReadsReplicas(t *testing.T, r *redis.ClusterClient, ns string) {
	t.Helper()
	before := testenv.ReplicaCalls(t, r, "hget")
	for range 50 {
		require.ErrorIs(t, r.HGet(context.Background(), "{"+ns+"}:probe", "f").Err(), redis.Nil)
	}
	assert.Greater(t, testenv.ReplicaCalls(t, r, "hget"), before, "the client reads from replicas")
}

// replicaReader returns a client of cluster that sends its read-only
// commands to replicas (RouteRandomly); it closes when t ends.
func replicaReader(t *testing.T, cluster testenv.Backend) *redis.ClusterClient {
	t.Helper()
	addrs := cluster.Redis.(*redis.ClusterClient).Options().Addrs
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, RouteRandomly: true})
	t.Cleanup(func() { r.Close() })
	require.NoError(t, r.Ping(context.Background()).Err())
	return r
}

// replicaReads sums the calls of the read-only commands that RMQ makes
// outside its scripts (and that replication never sends) over the Cluster's
// replicas: only clients that read from replicas add to it.
func replicaReads(t *testing.T, r *redis.ClusterClient) int64 {
	t.Helper()
	return testenv.ReplicaCalls(t, r, "hget", "hgetall", "mget", "zrange", "zcard", "exists", "get")
}
