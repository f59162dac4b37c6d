package rdb

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// outcome is a Completer that remembers its result.
type outcome chan error

func (o outcome) Complete(err error) { o <- err }

// wait returns the outcome, failing the test if none comes within d.
func (o outcome) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-o:
		return err
	case <-time.After(d):
		t.Fatalf("no outcome within %v", d)
		return nil
	}
}

// write writes entries in one write and returns their outcomes.
func write(s *sendStream, entries ...Entry) []outcome {
	outs := make([]outcome, len(entries))
	done := make([]Completer, len(entries))
	for i := range entries {
		outs[i] = make(outcome, 1)
		done[i] = outs[i]
	}
	s.writeCommands(entries, done, nil)
	return outs
}

// streamOn returns the send stream of a new go-redis client with opt, closed when t ends.
func streamOn(t *testing.T, opt *redis.Options) (*sendStream, *redis.Client) {
	t.Helper()
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	s := newSendStream(c, ReplicaAck{}, &wakeOutcome{log: discard})
	require.NotNil(t, s)
	t.Cleanup(func() { s.close(context.Background()) })
	return s, c
}

// singles runs fn with the options of each single-node backend: miniredis and the real redis-server.
func singles(t *testing.T, fn func(t *testing.T, b testenv.Backend, opt *redis.Options)) {
	t.Run("miniredis", func(t *testing.T) {
		b := testenv.Mini(t)
		fn(t, b, &redis.Options{Addr: b.Mini.Addr()})
	})
	t.Run("redis", func(t *testing.T) {
		b := testenv.Single(t)
		fn(t, b, &redis.Options{Addr: b.Redis.(*redis.Client).Options().Addr})
	})
}

// Writes from many goroutines, one at a time, all complete in order of their
// commands and leave every member stored with its score; an NX entry keeps
// the first score, as separate commands would.
func TestStreamStoresEveryEntry(t *testing.T) {
	singles(t, func(t *testing.T, b testenv.Backend, opt *redis.Options) {
		ns := testenv.Namespace(t, b)
		s, _ := streamOn(t, opt)
		var mu sync.Mutex // the sender elects one writer at a time
		var wg sync.WaitGroup
		const senders, each = 8, 200
		for g := range senders {
			wg.Go(func() {
				for i := range each {
					e := Entry{Key: fmt.Sprintf("%s:k%d", ns, i%5), Score: float64(g*each+i) + 0.5, Member: fmt.Appendf(nil, "m%d-%d", g, i)}
					mu.Lock()
					outs := write(s, e)
					mu.Unlock()
					assert.NoError(t, outs[0].wait(t, 5*time.Second))
				}
			})
		}
		wg.Wait()
		ctx := context.Background()
		total := int64(0)
		for k := range 5 {
			n, err := b.Redis.ZCard(ctx, fmt.Sprintf("%s:k%d", ns, k)).Result()
			require.NoError(t, err)
			total += n
		}
		assert.Equal(t, int64(senders*each), total)
		score, err := b.Redis.ZScore(ctx, ns+":k3", "m2-8").Result()
		require.NoError(t, err)
		assert.Equal(t, float64(2*each+8)+0.5, score)

		key := ns + ":nx"
		outs := write(s, Entry{Key: key, Score: 7, Member: []byte("a"), NX: true},
			Entry{Key: key, Score: 9, Member: []byte("a"), NX: true},
			Entry{Key: key, Score: 1.5e15 + 3, Member: []byte("b")})
		for _, o := range outs {
			require.NoError(t, o.wait(t, 5*time.Second))
		}
		got, err := b.Redis.ZRangeWithScores(ctx, key, 0, -1).Result()
		require.NoError(t, err)
		assert.Equal(t, []redis.Z{{Score: 7, Member: "a"}, {Score: 1.5e15 + 3, Member: "b"}}, got)
	})
}

// An error reply fails its own command only; publications complete too.
func TestStreamErrorReplyFailsOneCommand(t *testing.T) {
	singles(t, func(t *testing.T, b testenv.Backend, opt *redis.Options) {
		ns := testenv.Namespace(t, b)
		ctx := context.Background()
		require.NoError(t, b.Redis.Set(ctx, ns+":str", "x", 0).Err())
		s, _ := streamOn(t, opt)
		outs := []outcome{make(outcome, 1), make(outcome, 1), make(outcome, 1)}
		pub := make(outcome, 2)
		s.pubTo = func(*Publication) Completer { return pub } // each publication's reply
		s.writeCommands([]Entry{
			{Key: ns + ":z", Score: 1, Member: []byte("a")},
			{Key: ns + ":str", Score: 1, Member: []byte("b")},
			{Key: ns + ":z", Score: 2, Member: []byte("c")},
		}, []Completer{outs[0], outs[1], outs[2]}, []Publication{{Channel: ns + ":wake", Payload: []byte("1:0")}, {Channel: ns + ":wake2", Payload: []byte("2:0")}})
		require.NoError(t, outs[0].wait(t, 5*time.Second))
		err := outs[1].wait(t, 5*time.Second)
		var re ReplyError
		require.ErrorAs(t, err, &re)
		assert.True(t, strings.HasPrefix(string(re), "WRONGTYPE"), "got %q", re)
		require.NoError(t, outs[2].wait(t, 5*time.Second))
		require.NoError(t, pub.wait(t, 5*time.Second))
		require.NoError(t, pub.wait(t, 5*time.Second))
		n, err := b.Redis.ZCard(ctx, ns+":z").Result()
		require.NoError(t, err)
		assert.Equal(t, int64(2), n)
	})
}

// A killed connection fails what is in flight with an error, and the next
// write dials a new one.
func TestStreamRedialsAfterTheConnectionIsKilled(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	opt := &redis.Options{Addr: b.Redis.(*redis.Client).Options().Addr, ClientName: ns}
	s, _ := streamOn(t, opt)
	require.NoError(t, write(s, Entry{Key: ns + ":z", Score: 1, Member: []byte("a")})[0].wait(t, 5*time.Second))

	list, err := b.Redis.ClientList(ctx).Result()
	require.NoError(t, err)
	var id string
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " name="+ns+" ") {
			id = strings.TrimPrefix(strings.Fields(line)[0], "id=")
		}
	}
	require.NotEmpty(t, id, "the stream's connection carries the client name")
	require.NoError(t, b.Redis.Do(ctx, "CLIENT", "KILL", "ID", id).Err())

	deadline := time.Now().Add(5 * time.Second)
	failures := 0
	for {
		err := write(s, Entry{Key: ns + ":z", Score: 2, Member: []byte("b")})[0].wait(t, 5*time.Second)
		if err == nil {
			break
		}
		failures++
		require.True(t, time.Now().Before(deadline), "no write succeeded after the kill: %v", err)
	}
	assert.LessOrEqual(t, failures, 1, "only a write racing the kill may fail")
	n, err := b.Redis.ZCard(ctx, ns+":z").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
}

// An unreachable server fails each write with the dial error, at once.
func TestStreamReportsDialErrors(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	s, _ := streamOn(t, &redis.Options{Addr: addr, DialTimeout: time.Second})
	err = write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})[0].wait(t, 5*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dial "+addr)
}

// AUTH and SELECT run before the first command; a wrong password fails the
// dial and stores nothing.
func TestStreamAuthenticatesAndSelects(t *testing.T) {
	m := miniredis.RunT(t)
	m.RequireUserAuth("app", "secret")
	s, _ := streamOn(t, &redis.Options{Addr: m.Addr(), Username: "app", Password: "secret", DB: 3})
	require.NoError(t, write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})[0].wait(t, 5*time.Second))
	m.Select(3)
	members, err := m.ZMembers("k")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, members)

	bad, _ := streamOn(t, &redis.Options{Addr: m.Addr(), Username: "app", Password: "wrong", DB: 4})
	err = write(bad, Entry{Key: "k", Score: 1, Member: []byte("b")})[0].wait(t, 5*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AUTH")
	m.Select(4)
	assert.False(t, m.Exists("k"))
}

// Close lets commands in flight finish, then refuses writes.
func TestStreamCloseWaitsForRepliesThenRefuses(t *testing.T) {
	release := make(chan struct{})
	addr := testenv.FakeServer(t, func(c net.Conn, rd *bufio.Reader) {
		for {
			if _, ok := readCommand(rd); !ok {
				return
			}
			<-release
			if _, err := c.Write([]byte(":1\r\n")); err != nil {
				return
			}
		}
	})
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	s := newSendStream(rc, ReplicaAck{}, &wakeOutcome{log: discard})
	out := write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})[0]
	closed := make(chan struct{})
	go func() { s.close(context.Background()); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned with a reply outstanding")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	require.NoError(t, out.wait(t, 5*time.Second))
	<-closed
	assert.ErrorIs(t, write(s, Entry{Key: "k", Score: 1, Member: []byte("b")})[0].wait(t, time.Second), ErrClosed)
}

// Only a plain single-node client gets a send stream.
func TestNewStreamOnlyForPlainSingleNodeClients(t *testing.T) {
	m := miniredis.RunT(t)
	for name, c := range map[string]redis.UniversalClient{
		"cluster":    redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{m.Addr()}}),
		"on-connect": redis.NewClient(&redis.Options{Addr: m.Addr(), OnConnect: func(context.Context, *redis.Conn) error { return nil }}),
	} {
		assert.Nil(t, newSendStream(c, ReplicaAck{}, &wakeOutcome{log: discard}), name)
		c.Close()
	}
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	assert.NotNil(t, newSendStream(c, ReplicaAck{}, &wakeOutcome{log: discard}))
}

// discard is a logger that drops everything.
var discard = slog.New(slog.DiscardHandler)
