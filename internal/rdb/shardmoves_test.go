package rdb

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/keyslot"
)

// A MOVED that answers an SSUBSCRIBE is recorded with its hash slot and
// address for the loop; an ASK, a CLUSTERDOWN or a MOVED without an address
// is a drop only.
func TestShardSubReadRecordsWhereMovedSends(t *testing.T) {
	for refusal, want := range map[string][]shardMove{
		"MOVED 13250 127.0.0.1:7002":       {{slot: 13250, addr: "127.0.0.1:7002"}},
		"ASK 13250 127.0.0.1:7002":         nil,
		"MOVED 13250 :7002":                nil,
		"MOVED 99999 127.0.0.1:7002":       nil,
		"CLUSTERDOWN Hash slot not served": nil,
		"MOVED x 127.0.0.1:7002":           nil,
		"MOVED 0 [::1]:7002":               {{slot: 0, addr: "[::1]:7002"}},
		"MOVED 16383 redis-2.example:6379": {{slot: 16383, addr: "redis-2.example:6379"}},
	} {
		s := &shardSub{kick: make(chan struct{}, 1), stop: func() {}}
		err := s.read(bufio.NewReader(strings.NewReader("-"+refusal+"\r\n")), func(any) {})
		assert.ErrorIs(t, err, io.EOF, refusal)
		assert.Equal(t, want, s.moves, refusal)
		assert.Len(t, s.kick, 1, "%s: the loop is told", refusal)
	}
}

// The loop places the channels of a hash slot a MOVED named at its address
// while the slot map names another, gives them back to the map once it
// agrees or the MOVED is older than shardMovedTrust, and at once when a
// subscription at that address fails.
func TestShardMovesPlaceChannels(t *testing.T) {
	chans := []string{"ns:{t:0}:wake", "ns:{t:1}:wake", "ns:{t:2}:wake", "other:{t:1}:wake"} // two in one hash slot
	s := &shardSub{addr: "a:1", channels: chans, kick: make(chan struct{}, 1), stop: func() {}}
	s.movedTo(shardMove{slot: keyslot.Of(chans[1]), addr: "b:2"})
	s.movedTo(shardMove{slot: keyslot.Of(chans[2]), addr: "a:1"}) // its own node: ignored
	moved := make(map[string]shardMoved)
	now := time.Now()
	s.noteMoves(moved, now)
	require.Equal(t, map[string]shardMoved{chans[1]: {addr: "b:2", at: now}, chans[3]: {addr: "b:2", at: now}}, moved)
	assert.Empty(t, s.moves, "taken")
	s.noteMoves(moved, now.Add(time.Second))
	assert.Len(t, moved, 2, "nothing new")
	delete(moved, chans[3])

	assert.Equal(t, "a:1", placeMoved(moved, chans[0], "a:1"), "not moved")
	assert.Equal(t, "b:2", placeMoved(moved, chans[1], "a:1"), "the MOVED over a stale map")
	assert.Equal(t, "b:2", placeMoved(moved, chans[1], "b:2"), "the map agrees")
	assert.Empty(t, moved, "forgotten once the map agrees")

	moved[chans[1]] = shardMoved{addr: "b:2", at: now.Add(-shardMovedTrust)}
	assert.Equal(t, "a:1", placeMoved(moved, chans[1], "a:1"), "the map rules again")
	assert.Empty(t, moved)

	moved[chans[1]] = shardMoved{addr: "b:2", at: now}
	moved[chans[2]] = shardMoved{addr: "c:3", at: now}
	forgetMoves(moved, "b:2")
	assert.Equal(t, map[string]shardMoved{chans[2]: {addr: "c:3", at: now}}, moved)
}
