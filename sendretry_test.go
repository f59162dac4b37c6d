package rmq_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Connections killed under concurrent Sends cost no Send an error: the send
// stream, like go-redis for pipelines, sends again on a fresh connection, and
// every message is stored. The client may retry 10 times: a Send fails, as
// documented, once its connection has died under it MaxRetries+1 times in a
// row, and with a kill every 20 ms a Send whose attempts each outlast the
// gap between two kills (a slow machine, -race) can meet four in a row, the
// default budget. The test proves that every killed Send goes again, not
// that three retries always suffice at that rate.
func TestSendsSurviveKilledConnections(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			addr := os.Getenv("RMQ_REDIS_ADDR")
			if addr == "" || testing.Short() {
				testenv.Missing(t, "RMQ_REDIS_ADDR")
			}
			var id [6]byte
			rand.Read(id[:])
			name := "rmq-killed-" + hex.EncodeToString(id[:])
			r := redis.NewClient(&redis.Options{Addr: addr, ClientName: name, MaxRetries: 10})
			t.Cleanup(func() { r.Close() })
			admin := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { admin.Close() })
			b := testenv.Backend{Name: "redis", Redis: r}
			c := newClient(t, b, rmq.WithSendStream(stream))
			define(t, c, "t", 8, rmq.Priority)
			ctx := context.Background()

			const senders, each = 16, 1500
			var errs atomic.Int64
			var firstErr atomic.Value
			var wg sync.WaitGroup
			for g := range senders {
				wg.Go(func() {
					for i := range each {
						m := rmq.PriorityMessage{Topic: "t", Content: fmt.Appendf(nil, "m-%d-%d", g, i), Priority: 100}
						if err := c.Producer().Send(ctx, m); err != nil {
							errs.Add(1)
							firstErr.CompareAndSwap(nil, err)
						}
					}
				})
			}
			stop := make(chan struct{})
			killed := make(chan int, 1)
			go func() { killed <- killClientsNamed(ctx, t, admin, name, stop) }()
			wg.Wait()
			close(stop)
			kills := <-killed

			t.Logf("%d connections killed during %d sends", kills, senders*each)
			require.GreaterOrEqual(t, kills, 3, "the test killed too few connections to prove anything")
			assert.Zero(t, errs.Load(), "sends failed; the first: %v", firstErr.Load())
			st, err := c.Stats(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, int64(senders*each), st.Store, "stored messages")
			if stream {
				assert.Positive(t, c.Metrics().SendRetries, "no streamed send was retried")
			}
		})
	}
}

// killClientsNamed kills, every 20 ms until stop, the connections named name
// (the stream's and the pool's), and returns how many it killed.
func killClientsNamed(ctx context.Context, t *testing.T, admin *redis.Client, name string, stop <-chan struct{}) int {
	kills := 0
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return kills
		case <-tick.C:
		}
		list, err := admin.ClientList(ctx).Result()
		if err != nil {
			t.Errorf("CLIENT LIST: %v", err)
			return kills
		}
		for line := range strings.SplitSeq(list, "\n") {
			if !strings.Contains(line, " name="+name+" ") {
				continue
			}
			var cid int64
			if _, err := fmt.Sscanf(line, "id=%d", &cid); err != nil {
				continue
			}
			if n, err := admin.ClientKillByFilter(ctx, "ID", fmt.Sprint(cid)).Result(); err == nil && n > 0 {
				kills++
			}
		}
	}
}

// A Send whose ctx has ended before it is written returns ctx.Err(), is
// counted in Metrics.SendsAbandoned and stores nothing; on every backend.
func TestSendWithEndedCtxIsNotWritten(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		c := newClient(t, b)
		define(t, c, "t", 8, rmq.Priority)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("late"), Priority: 100})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, int64(1), c.Metrics().SendsAbandoned)
		require.NoError(t, c.Producer().Send(context.Background(), rmq.PriorityMessage{Topic: "t", Content: []byte("on time"), Priority: 100}))
		st, err := c.Stats(context.Background(), "t")
		require.NoError(t, err)
		assert.Equal(t, int64(1), st.Store, "only the live Send is stored")
		assert.Equal(t, int64(1), c.Metrics().Sent)
	})
}

// Metrics.SendWrites and SendsWritten count the writes that carried Sends
// and the Sends in them (each Send once when nothing failed); SendBatch is
// in neither. On every backend.
func TestMetricsCountSendWrites(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		c := newClient(t, b)
		define(t, c, "t", 8, rmq.Priority)
		ctx := context.Background()
		const senders, each = 16, 20
		errs := make(chan error, senders)
		for i := range senders {
			go func() {
				for j := range each {
					if err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: fmt.Appendf(nil, "%d-%d", i, j), Priority: 100}); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range senders {
			require.NoError(t, <-errs)
		}
		m := c.Metrics()
		require.Zero(t, m.SendRetries, "a retry would be written twice")
		assert.Equal(t, int64(senders*each), m.SendsWritten)
		assert.GreaterOrEqual(t, m.SendWrites, int64(1))
		assert.LessOrEqual(t, m.SendWrites, m.SendsWritten)
		t.Logf("%d Sends in %d writes", m.SendsWritten, m.SendWrites)

		batch := make([]rmq.OutgoingMessage, 10)
		for i := range batch {
			batch[i] = rmq.PriorityMessage{Topic: "t", Content: fmt.Appendf(nil, "b%d", i), Priority: 100}
		}
		require.NoError(t, c.Producer().SendBatch(ctx, batch...))
		after := c.Metrics()
		assert.Equal(t, m.SendWrites, after.SendWrites, "SendBatch is no Send write")
		assert.Equal(t, m.SendsWritten, after.SendsWritten)
		assert.Equal(t, int64(senders*each+len(batch)), after.Sent)
	})
}
