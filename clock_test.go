package rmq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The skew kept is the bound of what a call saw nearer zero, and none
// where the clocks may agree.
func TestRedisClockKeepsTheBoundNearerZero(t *testing.T) {
	sent := time.Now()
	recv := sent.Add(3 * time.Millisecond)
	mid := sent.Add(1500 * time.Microsecond).UnixMicro()
	var r redisClock
	for _, c := range []struct {
		name  string
		nowUs int64
		want  time.Duration
	}{
		{"agree", mid, 0},
		{"within the round trip and the tolerance", recv.UnixMicro() + 900, 0},
		{"ahead", recv.UnixMicro() + 10_000_000, 10 * time.Second},
		{"behind", sent.UnixMicro() - 10_000_000, -10 * time.Second},
		{"no clock read", 0, -10 * time.Second}, // keeps the last
	} {
		r.note(c.nowUs, sent, recv)
		assert.Equal(t, c.want, time.Duration(r.ahead.Load())*time.Microsecond, c.name)
	}
	r.ahead.Store((10 * time.Second).Microseconds())
	assert.Equal(t, time.UnixMilli(5000).Add(-10*time.Second), r.local(5000), "Redis's 5 s is 10 s earlier here")
}
