package rdb

import (
	"context"
	"fmt"
	"maps"
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
// comes within milliseconds (held at most the hold), on its slot's sharded
// channel, its entry is stored by the time it arrives, and a burst of Sends
// publishes its wake-ups at most once per hold and stream, fewer than it
// makes writes, each on the sharded channel of a slot it names.
//
// The hold is 10 ms here, not wakeHold's 1 ms: holding saves publications
// only while a stream's writes come faster than the hold, and under -race
// on a busy 2-core machine a burst's writes came 1.6 ms apart (2,000 Sends
// in 494 ms), so that each write's wake-ups went out alone after 1 ms.
func TestClusterStreamsHoldWakeUps(t *testing.T) {
	b := testenv.Cluster(t)
	br, ks, counts := sendBroker(t, b, true)
	require.IsType(t, &sendCluster{}, br.(*redisBroker).send.strategy)
	cl := br.(*redisBroker).send.strategy.(*sendCluster)
	const hold = 10 * time.Millisecond
	cl.timer.hold = hold // before the first Send makes a stream
	ctx := context.Background()
	const n, slots = 2000, 16
	ch := ks.WakeChannel("t")
	shards := slotWakes(ks, "t", slots)
	l := listenShards(t, br.(*redisBroker), shards)
	l.waitSubscribed(t, shards, 1, 10*time.Second)
	wake := func(slot int, dueMs int64) Wake {
		return Wake{Channel: ch, Shard: ks.Slot("t", slot).Wake, Slot: slot, DueMs: dueMs}
	}

	key := ks.Slot("t", 3).Store
	sent := time.Now()
	require.NoError(t, br.Send(ctx, Entry{Key: key, Score: 1, Member: []byte("lone"), Wake: wake(3, 0)}))
	select {
	case m := <-l.msgs:
		took := time.Since(sent)
		assert.Equal(t, shards[3], m.Channel)
		assert.Equal(t, "3:0", m.Payload)
		assert.Less(t, took, 100*time.Millisecond, "a held wake-up goes out within the hold and the timer's turn")
		_, err := b.Redis.ZScore(ctx, key, "lone").Result()
		assert.NoError(t, err, "the entry is stored before its wake-up")
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up")
	}

	var wg sync.WaitGroup
	writesBefore := counts.Writes.Load()
	burst := time.Now()
	for g := range 16 {
		wg.Go(func() {
			for i := g; i < n; i += 16 {
				slot := i % slots
				e := Entry{Key: ks.Slot("t", slot).Store, Score: float64(i), Member: fmt.Appendf(nil, "m-%d", i),
					Wake: wake(slot, 5)}
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
		case m := <-l.msgs:
			pubs++
			first, _, _ := strings.Cut(m.Payload, ":")
			assert.Equal(t, m.Channel, shards[atoi(t, first)], "published on the channel of the first slot named")
			for item := range strings.SplitSeq(m.Payload, ",") {
				slot, _, _ := strings.Cut(item, ":")
				woken[atoi(t, slot)] = true
			}
		case <-quiet.C:
			done = true
		}
	}
	cl.mu.Lock()
	streams := len(cl.streams)
	cl.mu.Unlock()
	t.Logf("%d Sends in %d writes over %v published %d wake-ups through %d streams", n, writes, elapsed, pubs, streams)
	assert.Len(t, woken, slots, "every slot woken")
	// Each stream publishes what it holds at most once per hold (and
	// once more after the burst), however fast the writes come: a wake-up
	// per write would be several times as many here.
	windows := int(elapsed/hold) + 2
	assert.LessOrEqual(t, pubs, streams*windows, "wake-ups are held and published together, at most once per hold and stream")
	assert.Less(t, pubs, int(writes), "fewer publications than writes")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestClusterDropsIdleStreams: a master's send stream that took no write for
// the idle time is closed and forgotten at a later write to another master
// (a master removed from the Cluster keeps no stream), and a write to that
// master afterwards makes a new stream and stores its entry.
func TestClusterDropsIdleStreams(t *testing.T) {
	b := testenv.Cluster(t)
	br, ks, _ := sendBroker(t, b, true)
	rb := br.(*redisBroker)
	c := rb.send.strategy.(*sendCluster)
	c.idleDrop = 300 * time.Millisecond
	ctx := context.Background()

	keys := map[string]string{} // a store key per master address
	for slot := 0; len(keys) < 3 && slot < 256; slot++ {
		k := ks.Slot("t", slot)
		if node := rb.Node(k); node != "" && keys[node] == "" {
			keys[node] = k.Store
		}
	}
	require.Len(t, keys, 3, "a key on each master")
	streams := func() map[string]*sendStream {
		c.mu.Lock()
		defer c.mu.Unlock()
		return maps.Clone(c.streams)
	}
	send := func(key, member string) {
		t.Helper()
		require.NoError(t, br.Send(ctx, Entry{Key: key, Score: 1, Member: []byte(member)}))
	}
	for _, key := range keys {
		send(key, "first")
	}
	before := streams()
	require.Len(t, before, 3)

	time.Sleep(2 * c.idleDrop)
	var kept string
	for addr, key := range keys {
		kept = addr
		send(key, "second")
		break
	}
	after := streams()
	assert.Len(t, after, 1, "the two idle streams are dropped")
	assert.Same(t, before[kept], after[kept], "the stream written to stays")
	for addr, s := range before {
		if addr == kept {
			continue
		}
		s.mu.Lock()
		closed, cn := s.closed, s.conn
		s.mu.Unlock()
		assert.True(t, closed, "%s: the dropped stream is closed", addr)
		require.NotNil(t, cn)
		cn.mu.Lock()
		cnErr := cn.err
		cn.mu.Unlock()
		assert.ErrorIs(t, cnErr, ErrClosed, "%s: its connection is closed", addr)

		send(keys[addr], "third")
		now := streams()
		assert.NotSame(t, s, now[addr], "%s: a new stream", addr)
		_, err := b.Redis.ZScore(ctx, keys[addr], "third").Result()
		assert.NoError(t, err, "%s: the entry sent through the new stream is stored", addr)
	}
}
