package rdb

import (
	"bufio"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A node that answers an SSUBSCRIBE with MOVED, ASK or CLUSTERDOWN (it serves
// the channel's slot no longer, or no slot at all: reset as it left the
// Cluster) has dropped that channel: the subscription goes on reading its
// other channels' pushes and tells the loop once; any other error reply
// ends it.
func TestShardSubReadTakesRefusalsAsDrops(t *testing.T) {
	for _, refusal := range []string{"MOVED 13250 127.0.0.1:7002", "ASK 13250 127.0.0.1:7002",
		"CLUSTERDOWN Hash slot not served", "CLUSTERDOWN The cluster is down"} {
		kick := make(chan struct{}, 1)
		s := &shardSub{kick: kick, stop: func() {}}
		wire := "*3\r\n$10\r\nssubscribe\r\n$1\r\na\r\n:1\r\n" +
			"-" + refusal + "\r\n" +
			"-" + refusal + "\r\n" +
			"*3\r\n$8\r\nsmessage\r\n$1\r\na\r\n$3\r\n3:0\r\n"
		var got []any
		err := s.read(bufio.NewReader(strings.NewReader(wire)), func(m any) { got = append(got, m) })
		assert.ErrorIs(t, err, io.EOF, "%s: read on past the refusal", refusal)
		require.Len(t, got, 2, refusal)
		assert.Equal(t, &redis.Message{Channel: "a", Payload: "3:0"}, got[1], refusal)
		assert.NotZero(t, s.droppedAt.Load(), "%s: taken as a drop", refusal)
		assert.Len(t, kick, 1, "%s: the loop is told once", refusal)
	}

	s := &shardSub{kick: make(chan struct{}, 1), stop: func() {}}
	err := s.read(bufio.NewReader(strings.NewReader("-ERR unknown command 'ssubscribe'\r\n")), func(any) {})
	assert.True(t, refusedCommand(err, "SSUBSCRIBE"), "another refusal ends the subscription: %v", err)
	assert.Zero(t, s.droppedAt.Load())
}

// A subscription's end is warned of unless it was ours, or the connection
// ended after the node had dropped channels (a node leaving the Cluster is
// reset, then shut down); an error reply always is.
func TestShardSubEndedBadly(t *testing.T) {
	ended := func(err error, dropped bool) bool {
		s := &shardSub{err: err}
		if dropped {
			s.droppedAt.Store(1)
		}
		return s.endedBadly()
	}
	assert.False(t, ended(net.ErrClosed, false), "closed by the loop")
	assert.True(t, ended(io.EOF, false), "a node that shut down unannounced")
	assert.False(t, ended(io.EOF, true), "a node that dropped channels, then shut down")
	assert.False(t, ended(&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true))
	assert.True(t, ended(ReplyError("ERR unknown command 'ssubscribe'"), true), "a refusal")
}
