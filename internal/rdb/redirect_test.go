package rdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// A MOVED or ASK reply names the node the entry goes to next; anything else,
// or a node without an announced address, leaves it to the slot map.
func TestRedirectOf(t *testing.T) {
	for _, c := range []struct {
		err  error
		addr string
		ask  bool
	}{
		{ReplyError("MOVED 1285 127.0.0.1:21528"), "127.0.0.1:21528", false},
		{fmt.Errorf("rmq: send: %w", ReplyError("ASK 7 10.0.0.2:6379")), "10.0.0.2:6379", true},
		{ReplyError("MOVED 1285 :6379"), "", false},
		{ReplyError("MOVED 1285"), "", false},
		{ReplyError("TRYAGAIN Multiple keys request during rehashing of slot"), "", false},
		{errors.New("MOVED 1285 127.0.0.1:21528"), "", false}, // not a server's reply
		{nil, "", false},
	} {
		addr, ask, ok := redirectOf(c.err)
		assert.Equal(t, c.addr != "", ok, "%v", c.err)
		assert.Equal(t, c.addr, addr, "%v", c.err)
		assert.Equal(t, c.ask, ask, "%v", c.err)
	}
	e := Entry{Key: "k"}
	e.redirectTo(ReplyError("ASK 7 10.0.0.2:6379"))
	assert.Equal(t, Entry{Key: "k", Node: "10.0.0.2:6379", Asking: true}, e)
	e.redirectTo(ReplyError("CLUSTERDOWN The cluster is down"))
	assert.Equal(t, Entry{Key: "k"}, e, "any other failure sends it by the slot map again")
}

// A slot's move shows as TRYAGAIN, MOVED or ASK (go-redis's replies are
// proven on the server: test/reshard); a Cluster that is down, a broken connection or an error that
// only reads like a reply are not one.
func TestSlotMoving(t *testing.T) {
	for _, c := range []struct {
		err    error
		moving bool
	}{
		{ReplyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{fmt.Errorf("rmq: pop: %w", ReplyError("MOVED 6341 127.0.0.1:7001")), true},
		{ReplyError("ASK 6341 127.0.0.1:7001"), true},
		{ReplyError("CLUSTERDOWN Hash slot not served"), true},
		{ReplyError("CLUSTERDOWN The cluster is down"), false},
		{errors.New("TRYAGAIN"), false},
		{net.ErrClosed, false},
		{nil, false},
	} {
		assert.Equal(t, c.moving, SlotMoving(c.err), "%v", c.err)
	}
}

// An entry written behind ASKING keeps every reply of the write in its
// place, with and without a WAIT behind the entries: on a server without
// cluster support ASKING is refused, which only its own (ignored) reply
// says, and the entries are stored.
func TestStreamWritesAskingBeforeAnAskedEntry(t *testing.T) {
	b := testenv.Single(t)
	opt := &redis.Options{Addr: b.Redis.(*redis.Client).Options().Addr}
	ns := testenv.Namespace(t, b)
	for _, ack := range []ReplicaAck{{}, {Replicas: 1, Timeout: 10 * time.Millisecond}} {
		c := redis.NewClient(opt)
		t.Cleanup(func() { c.Close() })
		s := newSendStream(c, ack, &wakeOutcome{log: discard})
		require.NotNil(t, s)
		key := fmt.Sprintf("%s:asking:%d", ns, ack.Replicas)
		outs := write(s,
			Entry{Key: key, Score: 1, Member: []byte("a"), Asking: true},
			Entry{Key: key, Score: 2, Member: []byte("b")},
			Entry{Key: key, Score: 3, Member: []byte("c"), Asking: true})
		for i, o := range outs {
			err := o.wait(t, 5*time.Second)
			if ack.on() {
				assert.ErrorIs(t, err, ErrNotReplicated, "entry %d: WAIT's verdict (no replica here)", i)
			} else {
				assert.NoError(t, err, "entry %d", i)
			}
		}
		got, err := c.ZRangeWithScores(context.Background(), key, 0, -1).Result()
		require.NoError(t, err)
		assert.Equal(t, []redis.Z{{Score: 1, Member: "a"}, {Score: 2, Member: "b"}, {Score: 3, Member: "c"}}, got)
		s.close(context.Background())
	}
}

// A redirection's client is made once per node and reused; one unused for
// redirectIdle closes at a later call, and the broker's Close closes the
// rest.
func TestRedirectNodesCloseUnusedClients(t *testing.T) {
	b := testenv.Cluster(t)
	topo := topologyOf(b.Redis)
	ctx := context.Background()
	key := "redirect-nodes"
	own, err := topo.client.MasterForKey(ctx, key)
	require.NoError(t, err)
	var others []string
	for _, addr := range strings.Split(os.Getenv("RMQ_CLUSTER_ADDRS"), ",") {
		if addr != own.Options().Addr && len(others) < 2 {
			others = append(others, addr)
		}
	}
	require.Len(t, others, 2)

	var n redirectNodes
	same, err := n.at(ctx, topo, own.Options().Addr, key)
	require.NoError(t, err)
	assert.Same(t, own, same, "the slot map's own client where it names the node")
	first, err := n.at(ctx, topo, others[0], key)
	require.NoError(t, err)
	again, err := n.at(ctx, topo, others[0], key)
	require.NoError(t, err)
	assert.Same(t, first, again, "one client per node")
	require.NoError(t, first.Ping(ctx).Err())

	n.mu.Lock()
	n.byAddr[others[0]].used = time.Now().Add(-redirectIdle)
	n.pruned = time.Time{}
	n.mu.Unlock()
	second, err := n.at(ctx, topo, others[1], key)
	require.NoError(t, err)
	assert.ErrorIs(t, first.Ping(ctx).Err(), redis.ErrClosed, "the unused client is closed")
	n.mu.Lock()
	assert.Len(t, n.byAddr, 1)
	n.mu.Unlock()
	n.close()
	assert.ErrorIs(t, second.Ping(ctx).Err(), redis.ErrClosed, "Close closes the rest")
	_, err = n.at(ctx, topo, others[0], key)
	assert.ErrorIs(t, err, ErrClosed)
}
