package rdb

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// readCommand reads one RESP command; false at EOF.
func readCommand(rd *bufio.Reader) ([]string, bool) {
	line, err := readLine(rd)
	if err != nil || line[0] != '*' {
		return nil, false
	}
	var n int
	fmt.Sscan(string(line[1:]), &n)
	args := make([]string, n)
	for i := range args {
		if _, err := readLine(rd); err != nil {
			return nil, false
		}
		arg, err := readLine(rd)
		if err != nil {
			return nil, false
		}
		args[i] = string(arg)
	}
	return args, true
}

// A server that stops answering fails the commands awaiting replies after
// the read timeout, not later and not never.
func TestStreamFailsCommandsOfASilentServer(t *testing.T) {
	addr := testenv.FakeServer(t, func(c net.Conn, rd *bufio.Reader) {
		for {
			if _, ok := readCommand(rd); !ok {
				return
			}
		}
	})
	const timeout = 300 * time.Millisecond
	s, _ := streamOn(t, &redis.Options{Addr: addr, ReadTimeout: timeout})
	time.Sleep(timeout / 2) // an idle spell before the write must not count
	start := time.Now()
	err := write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})[0].wait(t, 10*timeout)
	require.Error(t, err)
	assert.True(t, isTimeout(err), "got %v", err)
	took := time.Since(start)
	t.Logf("failed after %v (read timeout %v)", took, timeout)
	assert.GreaterOrEqual(t, took, timeout)
	assert.Less(t, took, 3*timeout)
}

// A replica's READONLY reply fails the command and drops the connection, so
// the next write dials again (a failover behind the dialer reaches the new
// master).
func TestStreamDropsAConnectionThatRefusesWrites(t *testing.T) {
	var mu sync.Mutex
	dials := 0
	addr := testenv.FakeServer(t, func(c net.Conn, rd *bufio.Reader) {
		mu.Lock()
		dials++
		replica := dials == 1
		mu.Unlock()
		for {
			if _, ok := readCommand(rd); !ok {
				return
			}
			reply := ":1\r\n"
			if replica {
				reply = "-READONLY You can't write against a read only replica.\r\n"
			}
			if _, err := c.Write([]byte(reply)); err != nil {
				return
			}
		}
	})
	s, _ := streamOn(t, &redis.Options{Addr: addr})
	err := write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})[0].wait(t, 5*time.Second)
	var re ReplyError
	require.ErrorAs(t, err, &re)
	require.NoError(t, write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})[0].wait(t, 5*time.Second))
	mu.Lock()
	assert.Equal(t, 2, dials)
	mu.Unlock()
}

// A connection the server closed while idle (its timeout setting) is
// replaced before the next write, which therefore succeeds.
func TestStreamReplacesAConnectionClosedWhileIdle(t *testing.T) {
	addr, dials := countingRedis(t, 1) // then an "idle timeout"
	s, _ := streamOn(t, &redis.Options{Addr: addr})
	for i := range 3 {
		require.NoError(t, write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})[0].wait(t, 5*time.Second), "write %d", i)
		time.Sleep(50 * time.Millisecond) // the close reaches the client
	}
	assert.Equal(t, 3, dials())
}

// A connection idle for ConnMaxIdleTime, or older than ConnMaxLifetime, is
// replaced at the next write, as the go-redis pool replaces its own; no write
// fails for it, and a busy connection is kept.
func TestStreamRetiresIdleAndOldConnections(t *testing.T) {
	ok := func(t *testing.T, s *sendStream) {
		t.Helper()
		require.NoError(t, write(s, Entry{Key: "k", Score: 1, Member: []byte("a")})[0].wait(t, 5*time.Second))
	}

	t.Run("idle", func(t *testing.T) {
		addr, dials := countingRedis(t, 0)
		s, _ := streamOn(t, &redis.Options{Addr: addr, ConnMaxIdleTime: 200 * time.Millisecond})
		for range 5 { // busy: one connection
			ok(t, s)
			time.Sleep(20 * time.Millisecond)
		}
		assert.Equal(t, 1, dials())
		time.Sleep(250 * time.Millisecond)
		ok(t, s)
		assert.Equal(t, 2, dials(), "the idle connection was not replaced")
	})
	t.Run("lifetime", func(t *testing.T) {
		addr, dials := countingRedis(t, 0)
		s, _ := streamOn(t, &redis.Options{Addr: addr, ConnMaxLifetime: 150 * time.Millisecond})
		start := time.Now()
		for time.Since(start) < 500*time.Millisecond {
			ok(t, s)
			time.Sleep(10 * time.Millisecond)
		}
		assert.GreaterOrEqual(t, dials(), 3, "connections older than their lifetime were kept")
		assert.LessOrEqual(t, dials(), 5)
	})
	t.Run("default", func(t *testing.T) {
		addr, dials := countingRedis(t, 0)
		s, _ := streamOn(t, &redis.Options{Addr: addr})
		for range 3 {
			ok(t, s)
			time.Sleep(50 * time.Millisecond)
		}
		assert.Equal(t, 1, dials(), "go-redis defaults: 30 min idle, no lifetime")
	})
}

// countingRedis is a fake server that answers ":1" to up to replies commands
// per connection (no limit if 0), then closes it; dials counts connections.
func countingRedis(t *testing.T, replies int) (addr string, dials func() int) {
	var mu sync.Mutex
	n := 0
	addr = testenv.FakeServer(t, func(c net.Conn, rd *bufio.Reader) {
		mu.Lock()
		n++
		mu.Unlock()
		for i := 0; replies == 0 || i < replies; i++ {
			if _, ok := readCommand(rd); !ok {
				return
			}
			c.Write([]byte(":1\r\n"))
		}
		c.Close()
	})
	return addr, func() int { mu.Lock(); defer mu.Unlock(); return n }
}
