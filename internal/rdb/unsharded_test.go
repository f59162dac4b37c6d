package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestProducerTurnsBackToSPublish: on the test Cluster, a producer whose
// Redis user may not run SPUBLISH has its wake-up published again at once on
// the topic's broadcast channel and publishes the next ones there; once the
// user may (as after a rolling upgrade to Redis 7, or an ACL changed), its
// wake-ups go to the slots' sharded channels again after shardRetry.
func TestProducerTurnsBackToSPublish(t *testing.T) {
	b := testenv.Cluster(t)
	ctx := context.Background()
	admin := b.Redis.(*redis.ClusterClient)
	user := "rmqturnback"
	pc := redis.NewClusterClient(testenv.ClusterUser(t, admin, user, "-spublish"))
	defer pc.Close()
	ks := NewKeyspace(testenv.Namespace(t, b))
	br := New(pc, ks, WithLogger(discard)).(*redisBroker)
	br.wakes.shardRetry = 500 * time.Millisecond
	defer br.Close(ctx)

	broadcast, shard := ks.WakeChannel("t"), ks.Slot("t", 3).Wake
	l := newShardLog()
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		br.Listen(lctx, []string{broadcast}, []string{shard}, l.deliver)
	}()
	defer func() { stop(); <-done }()
	l.waitSubscribed(t, []string{shard}, 1, 10*time.Second)
	expect := func(ch, payload string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case m := <-l.msgs:
				if m.Channel == ch && m.Payload == payload {
					return
				}
			case <-deadline:
				t.Fatalf("%q on %s not delivered", payload, ch)
			}
		}
	}
	require.Eventually(t, func() bool { // the broadcast channel is followed
		_ = admin.Publish(ctx, broadcast, "probe").Err()
		select {
		case m := <-l.msgs:
			return m.Channel == broadcast && m.Payload == "probe"
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, 10*time.Second, time.Millisecond, "the broadcast channel is not followed")
	send := func(member string) {
		t.Helper()
		require.NoError(t, br.Send(ctx, Entry{Key: ks.Slot("t", 3).Store, Score: 1, Member: []byte(member),
			Wake: Wake{Channel: broadcast, Shard: shard, Slot: 3}}))
	}
	sent := time.Now()
	send("a")
	expect(broadcast, "3:0") // the refused wake-up's slot
	assert.Less(t, time.Since(sent), wakeRetryAfter, "the refused wake-up published again at once")
	assert.False(t, br.wakes.sharded())
	send("b")
	expect(broadcast, "3:0")

	testenv.ClusterACL(t, admin, "SETUSER", user, "+spublish")
	require.Eventually(t, br.wakes.sharded, 5*time.Second, 10*time.Millisecond, "SPUBLISH not tried again")
	send("c")
	expect(shard, "3:0")
}
