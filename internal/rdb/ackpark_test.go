package rdb

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterWaitHoldsBackOnlyItsMaster: on a Cluster whose producer waits
// for a replica, a master whose replica is gone makes its own Sends wait out
// the WAIT timeout, one WAIT in flight at a time, and fail with
// ErrNotReplicated (their entries stored), while the other masters' Sends
// meanwhile go on at their own pace: the one writer that serves every
// master's stream does not wait for that master's WAIT. Closing the broker
// while Sends are parked behind a WAIT writes them once it answers.
func TestClusterWaitHoldsBackOnlyItsMaster(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	const timeout = 1500 * time.Millisecond
	cl, client, br := privateBroker(t, "park", WithReplicaAck(ReplicaAck{Replicas: 1, Timeout: timeout}))
	ctx := context.Background()
	masters, err := cl.Masters(ctx)
	require.NoError(t, err)
	require.Len(t, masters, 3)
	orphan := masters[0].Addr
	orphanKey := keyOn(t, cl, "park", orphan)
	others := []string{keyOn(t, cl, "park", masters[1].Addr), keyOn(t, cl, "park", masters[2].Addr)}
	// Every master acknowledges while its replica lives (the streams dial).
	for _, k := range append([]string{orphanKey}, others...) {
		require.NoError(t, br.Send(ctx, Entry{Key: k, Score: 1, Member: []byte("warm")}))
	}
	replica, err := cl.ReplicaOf(ctx, orphan)
	require.NoError(t, err)
	cl.Kill(t, replica)

	// Three senders keep the orphaned master's stream busy: a WAIT in flight
	// and Sends parked behind it.
	stop := make(chan struct{})
	var orphans sync.WaitGroup
	type outcome struct {
		took time.Duration
		err  error
	}
	results := make(chan outcome, 64)
	for g := range 3 {
		orphans.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				err := br.Send(ctx, Entry{Key: orphanKey, Score: 1, Member: fmt.Appendf(nil, "o%d-%d", g, i)})
				results <- outcome{time.Since(t0), err}
			}
		})
		time.Sleep(100 * time.Millisecond)
	}
	// Meanwhile the other masters' Sends, one at a time, over two timeouts.
	var slowest time.Duration
	sent := 0
	for start := time.Now(); time.Since(start) < 2*timeout; sent++ {
		t0 := time.Now()
		require.NoError(t, br.Send(ctx, Entry{Key: others[sent%2], Score: 1, Member: fmt.Appendf(nil, "x%d", sent)}))
		slowest = max(slowest, time.Since(t0))
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("%d Sends to the other masters while the orphaned master's WAITs timed out; the slowest took %v", sent, slowest)
	assert.Less(t, slowest, timeout/3, "a Send to another master waited for the orphaned master's WAIT")

	// Closing while Sends are parked: each ends with the WAIT's verdict.
	close(stop)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		br.Close(ctx)
	}()
	orphans.Wait()
	<-closed
	close(results)
	n := 0
	for r := range results {
		n++
		assert.ErrorIs(t, r.err, ErrNotReplicated)
		assert.Less(t, r.took, 2*timeout+parkGrace+time.Second, "a Send waited past its WAIT and the one before it")
	}
	assert.GreaterOrEqual(t, n, 3, "the orphaned master's Sends ended")
	stored, err := client.ZCard(ctx, orphanKey).Result()
	require.NoError(t, err)
	assert.Equal(t, int64(n+1), stored, "every Send the orphaned master failed with ErrNotReplicated was stored")
}
