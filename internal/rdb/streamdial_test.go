package rdb

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// After a failed dial a stream dials again only once its pause is over
// (doubling from minDialWait up to maxDialWait): the writes meanwhile fail at
// once with that dial's error. Once the server answers again, the next dial
// after the pause connects, the pause is reset and the writes are stored.
func TestStreamPausesDialsAfterAFailure(t *testing.T) {
	srv := miniredis.RunT(t)
	var dials atomic.Int64
	var refuse atomic.Bool
	refuse.Store(true)
	errRefused := errors.New("refused")
	s, _ := streamOn(t, &redis.Options{Addr: srv.Addr(), Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		if refuse.Load() {
			return nil, errRefused
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}})

	start := time.Now()
	writes := 0
	for time.Since(start) < 300*time.Millisecond {
		err := write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})[0].wait(t, 5*time.Second)
		require.ErrorIs(t, err, errRefused)
		writes++
		time.Sleep(100 * time.Microsecond)
	}
	// Pauses of 5, 10, 20, 40, 80 and 100 ms: at most 7 dials in 300 ms.
	t.Logf("%d writes in %v dialled %d times", writes, time.Since(start), dials.Load())
	assert.Greater(t, writes, 100)
	assert.LessOrEqual(t, dials.Load(), int64(8), "a failed dial was tried again by the writes that followed")
	assert.GreaterOrEqual(t, dials.Load(), int64(3), "the stream stopped dialling")

	refuse.Store(false)
	require.Eventually(t, func() bool {
		return write(s, Entry{Key: "k", Score: 1, Member: []byte("b")})[0].wait(t, 5*time.Second) == nil
	}, 5*time.Second, time.Millisecond, "the stream never dialled again")
	s.mu.Lock()
	wait, failed := s.dialWait, s.dialErr
	s.mu.Unlock()
	assert.Zero(t, wait, "the pause is reset by a dial that succeeds")
	assert.NoError(t, failed)
	members, err := srv.ZMembers("k")
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, members)
}

// A Cluster's stream (one that parks) never dials in the writer: when its
// connection fails after park looked (a frozen master's read timeout), the
// write returns at once, its requests failed with errDialAside (sent again
// without spending a retry: deadWrite), and the connection is dialled again
// aside; once that dial is over the writer is brought back and the next
// write is stored.
func TestParkingStreamDialsAsideWhenItsConnectionFailsAtTheWrite(t *testing.T) {
	srv := miniredis.RunT(t)
	hang := make(chan struct{})
	var hanging atomic.Bool
	s, _ := streamOn(t, &redis.Options{Addr: srv.Addr(), Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if hanging.Load() {
			<-hang // a node that takes the connection and never answers
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}})
	kicked := make(chan struct{}, 1)
	s.kick = func() {
		select {
		case kicked <- struct{}{}:
		default:
		}
	}
	cn, err := s.current()
	require.NoError(t, err)
	hanging.Store(true)
	released := time.AfterFunc(3*time.Second, func() { close(hang) }) // ends the test's hang either way
	defer released.Stop()
	cn.fail(errors.New("read timeout")) // after park found it usable

	start := time.Now()
	out := write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})
	took := time.Since(start)
	err = out[0].wait(t, 5*time.Second)
	assert.Less(t, took, 500*time.Millisecond, "the writer dialled the failed connection's node itself")
	require.ErrorIs(t, err, errDialAside)
	assert.True(t, retryable(err) && deadWrite(err), "sent again, no retry spent")
	s.mu.Lock()
	aside := s.dialing != nil
	s.mu.Unlock()
	assert.True(t, aside, "no dial aside under way")

	if released.Stop() {
		close(hang)
	}
	select {
	case <-kicked:
	case <-time.After(5 * time.Second):
		t.Fatal("the writer was not brought back after the dial")
	}
	require.NoError(t, write(s, Entry{Key: "k", Score: 1, Member: []byte("b")})[0].wait(t, 5*time.Second))
	members, err := srv.ZMembers("k")
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, members)
}
