package rdb

import (
	"bufio"
	"context"
	"fmt"
	"net"
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

// shardLog records what a Listen delivers of sharded channels.
type shardLog struct {
	mu   sync.Mutex
	subs map[string]int // ssubscribe confirmations per channel
	msgs chan *redis.Message
}

func newShardLog() *shardLog {
	return &shardLog{subs: make(map[string]int), msgs: make(chan *redis.Message, 1024)}
}

func (l *shardLog) deliver(msg any) {
	switch m := msg.(type) {
	case *redis.Subscription:
		if m.Kind == "ssubscribe" {
			l.mu.Lock()
			l.subs[m.Channel]++
			l.mu.Unlock()
		}
	case *redis.Message:
		l.msgs <- m
	}
}

func (l *shardLog) subscribed(ch string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.subs[ch]
}

// waitSubscribed waits until every channel was confirmed at least n times.
func (l *shardLog) waitSubscribed(t *testing.T, channels []string, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		missing := 0
		for _, ch := range channels {
			if l.subscribed(ch) < n {
				missing++
			}
		}
		if missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d channels not subscribed %d times within %v", missing, len(channels), n, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// await publishes payload to ch (SPUBLISH through client) every 100 ms until
// the Listen delivers it, or fails after within.
func (l *shardLog) await(ctx context.Context, t *testing.T, client *redis.ClusterClient, ch, payload string, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for {
		if err := client.SPublish(ctx, ch, payload).Err(); err != nil {
			client.ReloadState(ctx)
		}
		wait := time.After(100 * time.Millisecond)
		for {
			select {
			case m := <-l.msgs:
				if m.Channel == ch && m.Payload == payload {
					return
				}
				continue
			case <-wait:
			case <-deadline:
				t.Fatalf("%q on %s not delivered within %v", payload, ch, within)
			}
			break
		}
	}
}

// listenShards starts a Listen of channels on br; it stops when t ends.
func listenShards(t *testing.T, br *redisBroker, channels []string) *shardLog {
	l := newShardLog()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		br.Listen(ctx, []string{br.keys.ControlChannel()}, channels, l.deliver)
	}()
	t.Cleanup(func() { stop(); <-done })
	return l
}

func slotWakes(keys Keyspace, topic string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = keys.Slot(topic, i).Wake
	}
	return out
}

// TestListenFollowsEverySlotsShardedChannel: on the Cluster, a Listen
// subscribes each slot's sharded wake channel once, on its master, and
// delivers what is published to each.
func TestListenFollowsEverySlotsShardedChannel(t *testing.T) {
	b := testenv.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := NewKeyspace(testenv.Namespace(t, b))
	br := New(b.Redis, keys, WithLogger(discard)).(*redisBroker)
	defer br.Close(ctx)
	channels := slotWakes(keys, "t", 64)
	l := listenShards(t, br, channels)
	l.waitSubscribed(t, channels, 1, 10*time.Second)
	client := b.Redis.(*redis.ClusterClient)
	for i, ch := range channels {
		l.await(ctx, t, client, ch, strconv.Itoa(i)+":0", 5*time.Second)
	}
	for _, ch := range channels {
		require.Equal(t, 1, l.subscribed(ch), "%s subscribed more than once without a change", ch)
	}
}

// TestShardedChannelsFollowTheirSlots: on a private Cluster, a Listen's
// sharded channel follows its hash slot when the slot is given to another
// master (the old one drops the channel, SUNSUBSCRIBE), also for a consumer
// whose slot map stays stale, and when its master dies and its replica takes
// over; each time the channel is subscribed again, which wakes its slot, and
// what is published there arrives.
func TestShardedChannelsFollowTheirSlots(t *testing.T) {
	t.Parallel() // a private Cluster of its own
	if testing.Short() {
		t.Skip("starts a private Redis Cluster")
	}
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	defer client.Close()
	keys := NewKeyspace("shards")
	br := New(client, keys, WithLogger(discard)).(*redisBroker)
	defer br.Close(ctx)
	channels := slotWakes(keys, "t", 16)
	l := listenShards(t, br, channels)
	l.waitSubscribed(t, channels, 1, 10*time.Second)

	t.Run("migration", func(t *testing.T) {
		ch := channels[0]
		hashSlot := testenv.KeySlot(ch)
		_, to, err := cl.SlotMove(ctx, hashSlot)
		require.NoError(t, err)
		// The slot holds no key: it moves by CLUSTER SETSLOT … NODE alone.
		require.NoError(t, cl.GiveSlot(ctx, hashSlot, to))
		defer func() {
			if t.Failed() { // where each node, and the client's slot map, placed the slot
				t.Logf("hash slot %d given to %s; %s", hashSlot, to.Addr, slotViews(ctx, cl.Addrs(), client, ch, hashSlot))
			}
		}()
		l.waitSubscribed(t, []string{ch}, 2, 10*time.Second)
		l.await(ctx, t, client, ch, "after-migration", 10*time.Second)
		everyNodeSays(ctx, t, cl, hashSlot, to.Addr) // before the failover below
	})

	t.Run("migration-stale-map", func(t *testing.T) {
		followWithAStaleMap(ctx, t, cl, client, channels[2])
	})

	t.Run("failover", func(t *testing.T) {
		ch := channels[1]
		victim, err := cl.MasterOf(ctx, testenv.KeySlot(ch))
		require.NoError(t, err)
		before := l.subscribed(ch)
		l.await(ctx, t, client, ch, "before-kill", 5*time.Second)
		cl.Kill(t, victim)
		_, _, err = cl.WaitPromotion(ctx, victim)
		require.NoError(t, err)
		l.waitSubscribed(t, []string{ch}, before+1, 15*time.Second)
		l.await(ctx, t, client, ch, "after-failover", 15*time.Second)
	})
}

// slotViews says which master each node at addrs, and client's slot map,
// names for hashSlot (of key).
func slotViews(ctx context.Context, addrs []string, client *redis.ClusterClient, key string, hashSlot int) string {
	var b strings.Builder
	for _, addr := range addrs {
		fmt.Fprintf(&b, "%s says %q; ", addr, servedBy(ctx, addr, hashSlot))
	}
	if node, err := client.MasterForKey(ctx, key); err != nil {
		fmt.Fprintf(&b, "the client's map: %v", err)
	} else {
		fmt.Fprintf(&b, "the client's map says %s", node.Options().Addr)
	}
	return b.String()
}

// servedBy returns the address of the master that the node at addr says
// serves hashSlot ("" if it cannot say).
func servedBy(ctx context.Context, addr string, hashSlot int) string {
	nc := redis.NewClient(&redis.Options{Addr: addr})
	defer nc.Close()
	slots, err := nc.ClusterSlots(ctx).Result()
	if err != nil {
		return ""
	}
	for _, r := range slots {
		if r.Start <= hashSlot && hashSlot <= r.End && len(r.Nodes) > 0 {
			return r.Nodes[0].Addr
		}
	}
	return ""
}

// BenchmarkPlaceShards measures one look at where the sharded wake channels
// of 100 topics × 256 slots go (what a Listen does every listenRefresh on a
// Cluster); it needs the test Cluster.
func BenchmarkPlaceShards(b *testing.B) {
	be := testenv.Cluster(b)
	keys := NewKeyspace("bench")
	br := New(be.Redis, keys, WithLogger(discard)).(*redisBroker)
	defer br.Close(context.Background())
	var channels []string
	for topic := range 100 {
		channels = append(channels, slotWakes(keys, "topic-"+strconv.Itoa(topic), 256)...)
	}
	ctx := context.Background()
	want, nodes := make(map[string][]string), make(map[string]*redis.Options)
	b.ReportAllocs()
	for b.Loop() {
		if !br.placeShards(ctx, channels, nil, want, nodes) {
			b.Fatal("not placed")
		}
	}
}

// fakeShardNode serves sharded subscriptions: it confirms each SSUBSCRIBE,
// then writes what pushes sends it, and never answers PING.
func fakeShardNode(t *testing.T, pushes <-chan string) string {
	return testenv.FakeServer(t, func(c net.Conn, rd *bufio.Reader) {
		done := make(chan struct{})
		defer close(done)
		go func() {
			for {
				select {
				case p := <-pushes:
					c.Write([]byte(p))
				case <-done:
					return
				}
			}
		}()
		n := 0
		for {
			args, ok := readCommand(rd)
			if !ok {
				return
			}
			if strings.EqualFold(args[0], "SSUBSCRIBE") {
				n++
				fmt.Fprintf(c, "*3\r\n$10\r\nssubscribe\r\n$%d\r\n%s\r\n:%d\r\n", len(args[1]), args[1], n)
			}
		}
	})
}

// startShardSub runs a shardSub of channels against the node at addr.
func startShardSub(t *testing.T, addr string, channels []string) (*shardSub, *shardLog) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	o := c.Options() // with the dialer go-redis fills in
	require.NoError(t, c.Close())
	l := newShardLog()
	ctx, stop := context.WithCancel(context.Background())
	s := &shardSub{addr: addr, channels: channels, stop: stop, done: make(chan struct{}), lastPing: time.Now(),
		kick: make(chan struct{}, 1)}
	go s.run(ctx, o, nil, l.deliver)
	t.Cleanup(func() { s.close(); <-s.done })
	l.waitSubscribed(t, channels, 1, 5*time.Second)
	return s, l
}

// A sharded subscription delivers its node's messages, keeps its other
// channels when the node drops one (the slot moved), tells the loop and asks
// the node for the channel again, and
// ends when the node does not answer a PING within shardPongWait.
func TestShardSubDeliversAndEnds(t *testing.T) {
	channels := []string{"ns:{t:0}:wake", "ns:{t:1}:wake"}
	t.Run("message", func(t *testing.T) {
		pushes := make(chan string, 1)
		s, l := startShardSub(t, fakeShardNode(t, pushes), channels)
		pushes <- "*3\r\n$8\r\nsmessage\r\n$13\r\nns:{t:1}:wake\r\n$8\r\n1:0,0:17\r\n"
		select {
		case m := <-l.msgs:
			assert.Equal(t, channels[1], m.Channel)
			assert.Equal(t, "1:0,0:17", m.Payload)
		case <-time.After(5 * time.Second):
			t.Fatal("no message")
		}
		assert.True(t, s.subscribed.Load())
	})
	t.Run("moved", func(t *testing.T) {
		pushes := make(chan string, 1)
		s, l := startShardSub(t, fakeShardNode(t, pushes), channels)
		pushes <- "*3\r\n$12\r\nsunsubscribe\r\n$13\r\nns:{t:0}:wake\r\n:1\r\n"
		select {
		case <-s.kick:
		case <-time.After(5 * time.Second):
			t.Fatal("the loop was not told of the dropped channel")
		}
		assert.NotZero(t, s.droppedAt.Load())
		// the node is asked for the dropped channel again (a node that
		// gave its slot away answers MOVED with the new master); this
		// one still serves it
		l.waitSubscribed(t, channels[:1], 2, 5*time.Second)
		pushes <- "*3\r\n$8\r\nsmessage\r\n$13\r\nns:{t:1}:wake\r\n$4\r\n1:17\r\n"
		select {
		case m := <-l.msgs:
			assert.Equal(t, "1:17", m.Payload, "the other channel still delivers")
		case <-s.done:
			t.Fatalf("ended when a channel moved: %v", s.err)
		case <-time.After(5 * time.Second):
			t.Fatal("no message on the channel that stayed")
		}
	})
	t.Run("silent", func(t *testing.T) {
		s, _ := startShardSub(t, fakeShardNode(t, nil), channels)
		s.mu.Lock()
		s.lastPing = time.Now().Add(-shardPing)
		s.mu.Unlock()
		pinged := time.Now()
		s.ping()
		select {
		case <-s.done:
			took := time.Since(pinged)
			assert.GreaterOrEqual(t, took, shardPongWait-100*time.Millisecond)
			assert.True(t, isTimeout(s.err), "ended with %v", s.err)
		case <-time.After(shardPongWait + 5*time.Second):
			t.Fatal("still running without a PONG")
		}
	})
}

// TestShardSubKeepsItsChannelsAfterMoved: on the Cluster, an SSUBSCRIBE of a
// channel whose slot the node does not serve is answered MOVED (the slot map
// placed it by an older view while its slot moved); the subscription keeps
// its other channels and tells the loop, as when the node drops a channel.
func TestShardSubKeepsItsChannelsAfterMoved(t *testing.T) {
	b := testenv.Cluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := b.Redis.(*redis.ClusterClient)
	keys := NewKeyspace(testenv.Namespace(t, b))
	channels := slotWakes(keys, "t", 64)
	home, err := client.MasterForKey(ctx, channels[0])
	require.NoError(t, err)
	var served, elsewhere string
	for _, ch := range channels {
		node, err := client.MasterForKey(ctx, ch)
		require.NoError(t, err)
		if node.Options().Addr == home.Options().Addr {
			served = ch
		} else {
			elsewhere = ch
		}
	}
	require.NotEmpty(t, elsewhere, "every slot on one master")
	l := newShardLog()
	sctx, stop := context.WithCancel(ctx)
	s := &shardSub{addr: home.Options().Addr, channels: []string{elsewhere, served}, stop: stop,
		done: make(chan struct{}), lastPing: time.Now(), kick: make(chan struct{}, 1)}
	go s.run(sctx, home.Options(), nil, l.deliver)
	t.Cleanup(func() { s.close(); <-s.done })
	select {
	case <-s.kick:
	case <-s.done:
		t.Fatalf("ended on MOVED: %v", s.err)
	case <-time.After(5 * time.Second):
		t.Fatal("the loop was not told of the channel answered MOVED")
	}
	l.waitSubscribed(t, []string{served}, 1, 5*time.Second)
	l.await(ctx, t, client, served, "1:17", 5*time.Second)
	assert.Zero(t, l.subscribed(elsewhere))
	select {
	case <-s.done:
		t.Fatalf("ended: %v", s.err)
	default:
	}
}
