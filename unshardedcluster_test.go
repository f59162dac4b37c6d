package rmq_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestClusterWithoutShardedPubSub: on a Cluster whose nodes do not know
// SPUBLISH and SSUBSCRIBE (renamed away, as on a Cluster before Redis 7.0),
// the producer turns to the topics' broadcast channels at the first refusal
// and the consumer stops asking for sharded channels. So messages are
// delivered at once (not by the wake-up of every slot published again
// 100 ms after a failure, nor by the idle sweep, here 20 minutes away), and
// an idle consumer has none of its commands refused.
func TestClusterWithoutShardedPubSub(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	cl := testenv.StartCluster(t, testenv.ClusterOptions{ExtraArgs: []string{
		"--rename-command", "SPUBLISH", "", "--rename-command", "SSUBSCRIBE", ""}})
	ctx := context.Background()
	// DisableIdentity: go-redis's handshake of each new pooled connection
	// sends CLIENT SETINFO twice, which Redis 7.0 refuses (two error replies
	// whenever the idle consumer's pool grows by a connection).
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), DisableIdentity: true})
	t.Cleanup(func() { r.Close() })
	require.Error(t, r.SPublish(ctx, "probe", "x").Err(), "the nodes do not know SPUBLISH")

	c, err := rmq.New(r, rmq.WithNamespace("unsharded"), rmq.WithIdlePoll(time.Minute))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	define(t, c, "old", 8, rmq.Priority)
	rec := newRecorder()
	require.NoError(t, c.Subscribe("old", rec, rmq.WithThreads(2)))
	run(t, c)
	awaitHeld(t, c, "old", 8, 300*time.Millisecond)

	sendTimed(t, c, c, rec, "old", 12)
	var nodes []*redis.Client
	for _, addr := range cl.Addrs() {
		n := redis.NewClient(&redis.Options{Addr: addr, DisableIdentity: true})
		t.Cleanup(func() { n.Close() })
		nodes = append(nodes, n)
	}
	refused := func() int64 {
		var sum int64
		for _, n := range nodes {
			info, err := n.Info(ctx, "stats").Result()
			require.NoError(t, err)
			for line := range strings.Lines(info) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_error_replies:"); ok {
					k, err := strconv.ParseInt(v, 10, 64)
					require.NoError(t, err)
					sum += k
				}
			}
		}
		return sum
	}
	before := refused()
	time.Sleep(3 * time.Second)
	assert.Equal(t, before, refused(), "the idle consumer's commands were refused (sharded subscriptions asked for again)")
}

// TestProducerRefusedSPublishTurnsToPublish: on the test Cluster, a producer
// whose Redis user may not run SPUBLISH turns to the topics' broadcast
// channels at the first refusal, so its messages after the first are
// delivered at once, not by the wake-up published again 100 ms after each
// failure.
func TestProducerRefusedSPublishTurnsToPublish(t *testing.T) {
	b := testenv.Cluster(t)
	c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
	define(t, c, "acl", 8, rmq.Priority)
	rec := newRecorder()
	require.NoError(t, c.Subscribe("acl", rec, rmq.WithThreads(2)))
	run(t, c)
	awaitHeld(t, c, "acl", 8, 300*time.Millisecond)
	p, pc := producerAs(t, b, c.Namespace(), "-spublish")
	require.Error(t, pc.SPublish(context.Background(), "probe", "x").Err(), "the producer's user may not SPUBLISH")
	sendTimed(t, p, c, rec, "acl", 8)
}

// producerAs returns a client of the test Cluster in namespace ns, and its
// go-redis client, logged in as a user of its own (removed when t ends) with
// every permission and then rules.
func producerAs(t *testing.T, b testenv.Backend, ns string, rules ...string) (*rmq.Client, *redis.ClusterClient) {
	t.Helper()
	user := "rmqp" + strings.ReplaceAll(t.Name(), "/", "")
	pc := redis.NewClusterClient(testenv.ClusterUser(t, b.Redis.(*redis.ClusterClient), user, rules...))
	t.Cleanup(func() { pc.Close() })
	p, err := rmq.New(pc, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p, pc
}

// sendTimed sends n messages to topic through p, by turns with Send and
// SendBatch, each once c's slots have parked after the one before, and
// asserts that each after the first reaches rec within 90 ms of its send:
// by its own wake-up, not one published again after a failure (100 ms).
func sendTimed(t *testing.T, p, c *rmq.Client, rec *recorder, topic string, n int) {
	t.Helper()
	ctx := context.Background()
	var after []time.Duration // each message's delivery after its send
	for i := range n {
		content := "m" + strconv.Itoa(i)
		msg := rmq.PriorityMessage{Topic: topic, Content: []byte(content), Priority: 20}
		sent := time.Now()
		if i%2 == 0 {
			require.NoError(t, p.Producer().Send(ctx, msg))
		} else {
			require.NoError(t, p.Producer().SendBatch(ctx, msg))
		}
		select {
		case <-rec.seen:
		case <-time.After(3 * time.Second):
			t.Fatalf("%s not delivered within 3s", content)
		}
		after = append(after, time.Since(sent))
		calls := rec.snapshot()
		require.Equal(t, content, calls[len(calls)-1].content)
		// Its commit done, the slot parks: the next message needs a wake-up.
		eventually(t, 5*time.Second, "committed", func() bool { st := stats(t, c, topic); return st.Store+st.Prepare == 0 })
	}
	t.Logf("delivered after their sends: %v", after)
	slow := 0 // the first one's wake-up may have been the refused one
	for _, d := range after[1:] {
		if d >= 90*time.Millisecond {
			slow++
		}
	}
	assert.LessOrEqual(t, slow, 1,
		"messages waited for a wake-up published again (100 ms): wake-ups still go to sharded channels")
}
