package rmq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/internal/rdb"
)

// A slot that reaches ahead looks again popEarly before its next due time,
// so that the message due then is held rather than carried by a reply; a
// due time nearer than twice that (a retry) is looked at on time, and
// nothing due waits for the idle poll.
func TestAheadLook(t *testing.T) {
	c := &Client{}
	c.cfg.idlePoll = time.Minute
	th := &thread{sub: &subscription{c: c, lookahead: time.Second}}
	assert.Equal(t, 10*time.Millisecond, th.popEarly())
	const nowMs = 1795300000000
	now := time.Now()
	at := func(nextMs int64) time.Duration {
		return th.aheadLook(rdb.CycleResult{NowUs: nowMs * 1000, NowMs: nowMs, NextMs: nextMs}, now).Sub(now)
	}
	assert.Equal(t, 490*time.Millisecond, at(nowMs+500))
	assert.Equal(t, 15*time.Millisecond, at(nowMs+15), "nearer than twice popEarly: on time")
	assert.Equal(t, 11*time.Millisecond, at(nowMs+21))
	// Nothing due: the idle poll less its jitter (up to a fifth), popped
	// popEarly before it like any next look.
	for range 100 {
		d := at(-1)
		assert.LessOrEqual(t, d, time.Minute-10*time.Millisecond, "never: the idle poll")
		assert.GreaterOrEqual(t, d, time.Minute-time.Minute/5-10*time.Millisecond, "never: the idle poll")
	}

	th.sub.lookahead = 100 * time.Millisecond
	assert.Equal(t, 5*time.Millisecond, th.popEarly(), "a twentieth of a short lookahead")
}
