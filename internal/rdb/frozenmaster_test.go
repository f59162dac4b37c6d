package rdb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestClusterFrozenMasterHoldsBackOnlyItsSlots: a master frozen with
// SIGSTOP (its connections open, its socket buffers filling, a new
// connection's handshake unanswered: the client sets a name) holds back only
// its own slots' Sends; the other masters' Sends go on at their own pace, and
// once it is resumed it takes Sends again.
func TestClusterFrozenMasterHoldsBackOnlyItsSlots(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	// The frozen master stays a master for the whole test: it is marked
	// failed only after the node timeout, longer than the test.
	cl := testenv.StartCluster(t, testenv.ClusterOptions{NodeTimeout: 30 * time.Second})
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ClientName: "frozen-test",
		ReadTimeout: time.Second, DialTimeout: 2 * time.Second})
	br := New(client, NewKeyspace("frozen")).(*redisBroker)
	t.Cleanup(func() {
		br.Close(context.Background())
		client.Close()
	})
	ctx := context.Background()
	masters, err := cl.Masters(ctx)
	require.NoError(t, err)
	require.Len(t, masters, 3)
	frozenKey := keyOn(t, cl, "frozen", masters[0].Addr)
	others := []string{keyOn(t, cl, "frozen", masters[1].Addr), keyOn(t, cl, "frozen", masters[2].Addr)}
	for _, k := range append([]string{frozenKey}, others...) {
		require.NoError(t, br.Send(ctx, Entry{Key: k, Score: 1, Member: []byte("warm")}))
	}
	thaw := cl.Freeze(t, masters[0].Addr)

	// Senders keep the frozen master's stream busy: writes queued on its
	// connection, then, once that fails, dials whose handshake no one answers.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			go func() {
				defer cancel()
				br.Send(sctx, Entry{Key: frozenKey, Score: 1, Member: fmt.Appendf(nil, "f%d", i)})
			}()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	var slowest time.Duration
	sent := 0
	for start := time.Now(); time.Since(start) < 6*time.Second; sent++ {
		t0 := time.Now()
		require.NoError(t, br.Send(ctx, Entry{Key: others[sent%2], Score: 1, Member: fmt.Appendf(nil, "x%d", sent)}))
		slowest = max(slowest, time.Since(t0))
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	<-done
	thaw()
	t.Logf("%d Sends to the other masters while one was frozen; the slowest took %v", sent, slowest)
	assert.Less(t, slowest, 500*time.Millisecond, "a Send to another master waited for the frozen one")
	require.Eventually(t, func() bool {
		return br.Send(ctx, Entry{Key: frozenKey, Score: 1, Member: []byte("thawed")}) == nil
	}, 15*time.Second, 50*time.Millisecond, "the thawed master takes Sends again")
}
