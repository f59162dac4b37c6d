package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestClusterStreamsHoldWakeUps: on a Cluster, a lone Send's wake-up still
// comes within milliseconds (held at most wakeHold), its entry is stored by
// the time it arrives, and a burst of Sends publishes its wake-ups at most
// once per wakeHold and stream, fewer than it makes writes.
func TestClusterStreamsHoldWakeUps(t *testing.T) {
	b := testenv.Cluster(t)
	br, ks, counts := sendBroker(t, b, true)
	require.IsType(t, &sendCluster{}, br.(*redisBroker).send.strategy)
	ctx := context.Background()
	ch := ks.WakeChannel("t")
	ps := b.Redis.Subscribe(ctx, ch)
	defer ps.Close()
	_, err := ps.Receive(ctx)
	require.NoError(t, err)

	key := ks.Slot("t", 3).Store
	sent := time.Now()
	require.NoError(t, br.Send(ctx, Entry{Key: key, Score: 1, Member: []byte("lone"), Wake: Wake{Channel: ch, Slot: 3}}))
	select {
	case m := <-ps.Channel():
		took := time.Since(sent)
		assert.Equal(t, "3:0", m.Payload)
		assert.Less(t, took, 100*time.Millisecond, "a held wake-up goes out within wakeHold and the timer's turn")
		_, err := b.Redis.ZScore(ctx, key, "lone").Result()
		assert.NoError(t, err, "the entry is stored before its wake-up")
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up")
	}

	const n, slots = 2000, 16
	var wg sync.WaitGroup
	writesBefore := counts.Writes.Load()
	burst := time.Now()
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < n; i += 16 {
				slot := i % slots
				e := Entry{Key: ks.Slot("t", slot).Store, Score: float64(i), Member: fmt.Appendf(nil, "m-%d", i),
					Wake: Wake{Channel: ch, Slot: slot, DueMs: 5}}
				assert.NoError(t, br.Send(ctx, e))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(burst)
	writes := counts.Writes.Load() - writesBefore
	woken, pubs := map[int]bool{}, 0
	quiet := time.NewTimer(200 * time.Millisecond)
	for done := false; !done; {
		select {
		case m := <-ps.Channel():
			pubs++
			for item := range strings.SplitSeq(m.Payload, ",") {
				slot, _, _ := strings.Cut(item, ":")
				s, _ := strconv.Atoi(slot)
				woken[s] = true
			}
		case <-quiet.C:
			done = true
		}
	}
	cl := br.(*redisBroker).send.strategy.(*sendCluster)
	cl.mu.Lock()
	streams := len(cl.streams)
	cl.mu.Unlock()
	t.Logf("%d Sends in %d writes over %v published %d wake-ups through %d streams", n, writes, elapsed, pubs, streams)
	assert.Len(t, woken, slots, "every slot woken")
	// Each stream publishes what it holds at most once per wakeHold (and
	// once more after the burst), however fast the writes come: a wake-up
	// per write would be several times as many here.
	windows := int(elapsed/wakeHold) + 2
	assert.LessOrEqual(t, pubs, streams*windows, "wake-ups are held and published together, at most once per wakeHold and stream")
	assert.Less(t, pubs, int(writes), "fewer publications than writes")
}
