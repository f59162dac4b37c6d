package rmq_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestReplicaAck: with WithReplicaAck, Send and SendBatch succeed while the
// replica keeps up, and fail with ErrNotReplicated (the message stored on the
// master all the same) once it is gone, through the send stream and through
// pipelines alike.
func TestReplicaAck(t *testing.T) {
	t.Parallel() // a master and a replica of its own
	master := testenv.StartRedis(t)
	replica := testenv.StartRedis(t, "--replicaof", "127.0.0.1", strings.TrimPrefix(master.Addr(), "127.0.0.1:"))
	admin := redis.NewClient(&redis.Options{Addr: master.Addr()})
	t.Cleanup(func() { admin.Close() })
	waitForReplicas(t, admin, 1)

	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			ctx := context.Background()
			b := testenv.Backend{Name: "master", Redis: redis.NewClient(&redis.Options{Addr: master.Addr()})}
			t.Cleanup(func() { b.Redis.Close() })
			c := newClient(t, b, rmq.WithSendStream(stream), rmq.WithReplicaAck(1, 300*time.Millisecond))
			define(t, c, "acked", 4, rmq.Priority)
			p := c.Producer()

			require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "acked", Content: []byte("one"), Priority: 100}))
			require.NoError(t, p.SendBatch(ctx, rmq.PriorityMessage{Topic: "acked", Content: []byte("two"), Priority: 100},
				rmq.PriorityMessage{Topic: "acked", Content: []byte("three"), Priority: 100}))

			// Two replicas are asked for and one exists: the wait runs out.
			strict := newClient(t, b, rmq.WithSendStream(stream), rmq.WithReplicaAck(2, 100*time.Millisecond))
			define(t, strict, "acked", 4, rmq.Priority)
			start := time.Now()
			err := strict.Producer().Send(ctx, rmq.PriorityMessage{Topic: "acked", Content: []byte("four"), Priority: 100})
			require.ErrorIs(t, err, rmq.ErrNotReplicated)
			assert.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond, "the wait lasts its timeout")
			assert.Contains(t, err.Error(), "1 of 2 replicas")
			err = strict.Producer().SendBatch(ctx, rmq.PriorityMessage{Topic: "acked", Content: []byte("five"), Priority: 100})
			require.ErrorIs(t, err, rmq.ErrNotReplicated)

			st, err := c.Stats(ctx, "acked")
			require.NoError(t, err)
			assert.EqualValues(t, 3, st.Store)
			st, err = strict.Stats(ctx, "acked")
			require.NoError(t, err)
			assert.EqualValues(t, 2, st.Store, "an unconfirmed message is still stored on the master")
			assert.EqualValues(t, 2, strict.Metrics().Sent, "stored, unconfirmed: counted as sent")
			assert.EqualValues(t, 2, strict.TopicMetrics()[0].Sent, "stored, unconfirmed: counted as sent")
		})
	}

	t.Run("replica gone", func(t *testing.T) {
		ctx := context.Background()
		b := testenv.Backend{Name: "master", Redis: redis.NewClient(&redis.Options{Addr: master.Addr()})}
		t.Cleanup(func() { b.Redis.Close() })
		c := newClient(t, b, rmq.WithReplicaAck(1, 200*time.Millisecond))
		define(t, c, "gone", 1, rmq.Priority)
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "gone", Content: []byte("before"), Priority: 100}))
		replica.Kill(t)
		waitForReplicas(t, admin, 0)
		err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "gone", Content: []byte("after"), Priority: 100})
		require.ErrorIs(t, err, rmq.ErrNotReplicated)
		assert.False(t, errors.Is(err, context.DeadlineExceeded))
	})
}

// TestReplicaAckOptionIsChecked: bad values fail New with ErrInvalidOption.
func TestReplicaAckOptionIsChecked(t *testing.T) {
	b := testenv.Mini(t)
	for _, tc := range []struct {
		replicas int
		timeout  time.Duration
	}{{0, time.Second}, {-1, time.Second}, {1, 0}, {1, time.Microsecond}, {1, 2 * time.Minute}} {
		_, err := rmq.New(b.Redis, rmq.WithReplicaAck(tc.replicas, tc.timeout))
		assert.ErrorIs(t, err, rmq.ErrInvalidOption, "%d replicas, %v", tc.replicas, tc.timeout)
	}
	// The wait must end, with its slack, before the client's ReadTimeout, or
	// it reads as a silent server: Sends written again, a timeout returned.
	addr := b.Mini.Addr()
	for _, tc := range []struct {
		read, ack time.Duration
		ok        bool
	}{{time.Second, time.Second, false}, {time.Second, 900 * time.Millisecond, false},
		{time.Second, 800 * time.Millisecond, true}, {-1, time.Minute, true}} {
		rc := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: tc.read})
		_, err := rmq.New(rc, rmq.WithReplicaAck(1, tc.ack))
		if tc.ok {
			assert.NoError(t, err, "ReadTimeout %v, ack %v", tc.read, tc.ack)
		} else {
			assert.ErrorIs(t, err, rmq.ErrInvalidOption, "ReadTimeout %v, ack %v", tc.read, tc.ack)
		}
		rc.Close()
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, ReadTimeout: 500 * time.Millisecond})
	defer cc.Close()
	_, err := rmq.New(cc, rmq.WithReplicaAck(1, 500*time.Millisecond))
	assert.ErrorIs(t, err, rmq.ErrInvalidOption, "a Cluster client's ReadTimeout")
}

// waitForReplicas waits until the master counts n connected replicas that
// have caught up.
func waitForReplicas(t *testing.T, admin *redis.Client, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		info, err := admin.Info(context.Background(), "replication").Result()
		return err == nil && countOnlineReplicas(info) == n
	}, 10*time.Second, 20*time.Millisecond, "waiting for %d replicas", n)
}

// countOnlineReplicas counts the "slaveN:…,state=online,…" lines of INFO replication.
func countOnlineReplicas(info string) int {
	n := 0
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "slave") && strings.Contains(line, "state=online") {
			n++
		}
	}
	return n
}
