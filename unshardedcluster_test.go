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
	cl := testenv.StartCluster(t, testenv.ClusterOptions{ExtraArgs: []string{
		"--rename-command", "SPUBLISH", "", "--rename-command", "SSUBSCRIBE", ""}})
	ctx := context.Background()
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
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

	var after []time.Duration // each message's delivery after its send
	for i := range 12 {
		content := "m" + strconv.Itoa(i)
		sent := time.Now()
		if i%2 == 0 {
			require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "old", Content: []byte(content), Priority: 20}))
		} else {
			require.NoError(t, c.Producer().SendBatch(ctx, rmq.PriorityMessage{Topic: "old", Content: []byte(content), Priority: 20}))
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
		eventually(t, 5*time.Second, "committed", func() bool { st := stats(t, c, "old"); return st.Store+st.Prepare == 0 })
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

	var nodes []*redis.Client // kept open: a new connection's handshake has Redis 7.0 refuse CLIENT SETINFO
	for _, addr := range cl.Addrs() {
		n := redis.NewClient(&redis.Options{Addr: addr})
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
