package rdb

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// sendBroker returns a broker in a namespace of its own on b, closed when
// the test ends, and its counts.
func sendBroker(t *testing.T, b testenv.Backend, stream bool) (Broker, Keyspace, *SendCounts) {
	t.Helper()
	ks := NewKeyspace(testenv.Namespace(t, b))
	counts := new(SendCounts)
	br := New(b.Redis, ks, WithSendStream(stream), WithSendCounts(counts), WithLogger(discard))
	t.Cleanup(func() { br.Close(context.Background()) })
	return br, ks, counts
}

// storedIn returns the members of the store sets of slots 0..n-1 of topic t.
func storedIn(t *testing.T, b testenv.Backend, ks Keyspace, n int) int64 {
	t.Helper()
	total := int64(0)
	for _, k := range ks.Slots("t", n) {
		c, err := b.Redis.ZCard(context.Background(), k.Store).Result()
		require.NoError(t, err)
		total += c
	}
	return total
}

// Concurrent Sends, through either strategy, store every entry, share
// writes, and wake every slot they filled.
func TestBrokerSendStoresAndWakes(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
				br, ks, counts := sendBroker(t, b, stream)
				ctx := context.Background()
				const n, slots = 64, 8
				ch := ks.WakeChannel("t")
				pubs := wakeUps(t, b, br.(*redisBroker), ch, slotWakes(ks, "t", slots))

				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() {
						slot := i % slots
						e := Entry{Key: ks.Slot("t", slot).Store, Score: float64(i), Member: fmt.Appendf(nil, "m-%d", i),
							Wake: Wake{Channel: ch, Shard: ks.Slot("t", slot).Wake, Slot: slot, DueMs: int64(1000 + i)}}
						assert.NoError(t, br.Send(ctx, e))
					})
				}
				wg.Wait()
				assert.Equal(t, int64(n), storedIn(t, b, ks, slots))
				assert.Equal(t, int64(n), counts.Sent.Load())
				assert.Positive(t, counts.Writes.Load())
				assert.LessOrEqual(t, counts.Writes.Load(), int64(n))

				woken := map[int]bool{}
				deadline := time.After(5 * time.Second)
				for len(woken) < slots {
					select {
					case m := <-pubs:
						for item := range strings.SplitSeq(m.Payload, ",") {
							slot, due, ok := strings.Cut(item, ":")
							require.True(t, ok, "payload %q", m.Payload)
							s, _ := strconv.Atoi(slot)
							d, _ := strconv.Atoi(due)
							assert.GreaterOrEqual(t, d, 1000+s, "the earliest due of the slot's entries")
							woken[s] = true
						}
					case <-deadline:
						t.Fatalf("woken slots %v, want all %d", woken, slots)
					}
				}
			})
		}
	})
}

// wakeUps returns what is published of topic's wake-ups: on its channel ch
// on a single node, on the slots' sharded channels shards on a Cluster, once
// subscribed to all.
func wakeUps(t *testing.T, b testenv.Backend, br *redisBroker, ch string, shards []string) <-chan *redis.Message {
	if br.topo != nil {
		l := listenShards(t, br, shards)
		l.waitSubscribed(t, shards, 1, 10*time.Second)
		return l.msgs
	}
	ps := b.Redis.Subscribe(context.Background(), ch)
	t.Cleanup(func() { ps.Close() })
	_, err := ps.Receive(context.Background()) // subscribed
	require.NoError(t, err)
	return ps.Channel()
}

// Enqueue cuts a batch into pipelines of maxPipeline entries, each stored as
// a whole; after a pipeline with a failed entry the rest is not sent.
func TestEnqueueCutsPipelinesAndStopsAfterAFailure(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		const n, slots = 3*maxPipeline - 100, 8
		entries := func(ks Keyspace) []Entry {
			out := make([]Entry, n)
			for i := range out {
				out[i] = Entry{Key: ks.Slot("t", i%slots).Store, Score: float64(i), Member: fmt.Appendf(nil, "m-%d", i)}
			}
			return out
		}
		ctx := context.Background()

		br, ks, counts := sendBroker(t, b, false)
		errs, err := br.Enqueue(ctx, entries(ks), nil)
		require.NoError(t, err)
		assert.Nil(t, errs)
		assert.Equal(t, int64(n), storedIn(t, b, ks, slots))
		assert.Equal(t, int64(n), counts.Sent.Load())

		br, ks, counts = sendBroker(t, b, false)
		bad := ks.Slot("t", slots).Store
		require.NoError(t, b.Redis.Set(ctx, bad, "not a zset", 0).Err())
		all := entries(ks)
		const failed = maxPipeline + 88
		all[failed].Key = bad
		errs, err = br.Enqueue(ctx, all, nil)
		require.NoError(t, err)
		require.Len(t, errs, n)
		for i, err := range errs {
			switch {
			case i == failed:
				assert.ErrorContains(t, err, "WRONGTYPE")
			case i < 2*maxPipeline:
				assert.NoError(t, err, "entry %d", i)
			default:
				assert.ErrorIs(t, err, errNotSent, "entry %d", i)
			}
		}
		assert.Equal(t, int64(2*maxPipeline-1), storedIn(t, b, ks, slots))
		assert.Equal(t, int64(2*maxPipeline-1), counts.Sent.Load())
		typ, err := b.Redis.Type(ctx, bad).Result()
		require.NoError(t, err)
		assert.Equal(t, "string", typ)
	})
}

// Close on either strategy refuses later Sends; Enqueue still goes through
// the go-redis client.
func TestBrokerCloseRefusesSends(t *testing.T) {
	b := testenv.Mini(t)
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			br, ks, _ := sendBroker(t, b, stream)
			ctx := context.Background()
			e := Entry{Key: ks.Slot("t", 0).Store, Score: 1, Member: []byte("a")}
			require.NoError(t, br.Send(ctx, e))
			br.Close(ctx)
			assert.ErrorIs(t, br.Send(ctx, e), ErrClosed)
			errs, err := br.Enqueue(ctx, []Entry{e}, nil)
			require.NoError(t, err)
			assert.Nil(t, errs)
		})
	}
}

// The groups of a batch's entries leave each member with the score that the
// entries as separate ZADDs in their order would leave, whether a key's
// entries alternate between ASKING and not (a slot's migration: an entry
// redirected to the importing node, and a later one the refreshed slot map
// sends there too) and whether the groups are found by scanning or by map.
// (A later entry joined the key's first group, ahead of an ASKING group in
// between, and the older score won, with few groups only.)
func TestGroupsKeepTheOrderOfAKeysEntriesAcrossAsking(t *testing.T) {
	for _, others := range []int{0, linearFind + 4} {
		var entries []Entry
		for i := range others { // keys of their own, to reach the map
			entries = append(entries, Entry{Key: fmt.Sprintf("other%d", i), Member: []byte("m"), Score: 1})
		}
		entries = append(entries,
			Entry{Key: "k", Member: []byte("m"), Score: 1},
			Entry{Key: "k", Member: []byte("m"), Score: 2, Asking: true},
			Entry{Key: "k", Member: []byte("m"), Score: 3},
			Entry{Key: "k", Member: []byte("n"), Score: 4, Asking: true},
			Entry{Key: "k", Member: []byte("n"), Score: 5, Asking: true},
		)
		want := map[string]float64{}
		for _, e := range entries {
			want[e.Key+"/"+string(e.Member)] = e.Score
		}
		got := map[string]float64{}
		indexes := 0
		for _, g := range groupEntries(entries) {
			for _, m := range g.members {
				got[g.key+"/"+string(m.Member.([]byte))] = m.Score
			}
			indexes += len(g.entries)
		}
		assert.Equal(t, want, got, "with %d other keys", others)
		assert.Equal(t, len(entries), indexes, "every entry in one group")
	}
}
