package rdb

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A row of refusals while a hash slot moves: Debug at the
// first, Warn once the row has lasted warnAfter and every warnAfter after,
// pauses within a second; another error is no such refusal, and a reset
// starts a new row.
func TestSlotMovesLogsARowOnce(t *testing.T) {
	const warnAfter = 5 * time.Second
	refused := ReplyError("TRYAGAIN Multiple keys request during rehashing of slot")
	var m SlotMoves
	start := time.Now()
	debugs, warns := 0, 0
	var warnedAt []time.Duration
	for at := time.Duration(0); at <= 12*time.Second; at += 100 * time.Millisecond {
		pause, debug, warn, ok := m.Refused(refused, start.Add(at), warnAfter)
		assert.True(t, ok)
		assert.Positive(t, pause)
		assert.LessOrEqual(t, pause, time.Second)
		if debug {
			debugs++
		}
		if warn {
			warns++
			warnedAt = append(warnedAt, at)
		}
	}
	assert.Equal(t, 1, debugs, "Debug for the first refusal only")
	assert.Equal(t, []time.Duration{warnAfter, 2 * warnAfter}, warnedAt, "a Warn every warnAfter")
	assert.Equal(t, 12*time.Second, m.Lasted(start.Add(12*time.Second)))

	_, _, _, ok := m.Refused(errors.New("dial tcp: connection refused"), start, warnAfter)
	assert.False(t, ok, "a failure of another kind")
	m.Reset()
	assert.Zero(t, m.Lasted(time.Now()))
	_, debug, warn, ok := m.Refused(ReplyError("ASK 13386 127.0.0.1:7002"), start.Add(time.Minute), warnAfter)
	assert.True(t, ok && debug && !warn, "a new row begins with Debug")
}
