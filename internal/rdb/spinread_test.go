//go:build unix

package rdb

import (
	"errors"
	"io"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// loopbackPair returns both ends of a TCP connection on loopback.
func loopbackPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	server = <-accepted
	require.NotNil(t, server)
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func TestSpinReaderPollsOnlyWhileRepliesAreOwed(t *testing.T) {
	client, server := loopbackPair(t)
	var owed atomic.Int64
	r := newSpinReader(client, &owed, maxSpinPolls)
	require.NotNil(t, r.poll, "a TCP connection exposes its socket")
	buf := make([]byte, 16)

	// Nothing owed: a plain read, the budget untouched.
	r.polls = 5
	_, err := server.Write([]byte("idle"))
	require.NoError(t, err)
	n, err := r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "idle", string(buf[:n]))
	require.Equal(t, 5, r.polls)

	// Owed and already there: the first poll finds it and restores the budget.
	owed.Store(1)
	_, err = server.Write([]byte("reply"))
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond) // let loopback deliver it
	n, err = r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "reply", string(buf[:n]))
	require.Equal(t, maxSpinPolls, r.polls)

	// Owed and silent: the polls run dry, the read waits (here until its
	// deadline) and the next budget is halved.
	require.NoError(t, client.SetReadDeadline(time.Now().Add(30*time.Millisecond)))
	_, err = r.Read(buf)
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.Equal(t, maxSpinPolls/2, r.polls)
	for range 10 {
		_, err = r.Read(buf)
		require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	}
	require.Equal(t, minSpinPolls, r.polls, "the budget never drops below the minimum")
	require.NoError(t, client.SetReadDeadline(time.Time{}))

	// The end of the stream is reported as such.
	server.Close()
	time.Sleep(20 * time.Millisecond)
	_, err = r.Read(buf)
	require.ErrorIs(t, err, io.EOF)
}

func TestSpinReaderOnClosedConnection(t *testing.T) {
	client, _ := loopbackPair(t)
	var owed atomic.Int64
	owed.Store(3)
	r := newSpinReader(client, &owed, maxSpinPolls)
	client.Close()
	_, err := r.Read(make([]byte, 8))
	require.True(t, errors.Is(err, net.ErrClosed), "got %v", err)
}

func TestSpinReaderWithoutSocketParks(t *testing.T) {
	a, b := net.Pipe() // no socket to poll
	defer a.Close()
	defer b.Close()
	var owed atomic.Int64
	owed.Store(1)
	r := newSpinReader(a, &owed, maxSpinPolls)
	require.Nil(t, r.poll)
	go b.Write([]byte("x"))
	buf := make([]byte, 4)
	n, err := r.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "x", string(buf[:n]))
}
