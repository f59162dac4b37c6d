package rmq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// reachClock drives a masterReach as the reach watch does: a probe every
// reachProbe, whose PING is answered (or fails) at once when up says so
// and goes unanswered otherwise.
type reachClock struct {
	m   *masterReach
	now time.Time
}

func newReachClock() *reachClock {
	now := time.Unix(1_000_000, 0)
	return &reachClock{m: newMasterReach(now), now: now}
}

// run probes for d with the link up or down, and returns whether the
// master was declined at each probe.
func (c *reachClock) run(d time.Duration, up bool) []bool {
	var out []bool
	for end := c.now.Add(d); c.now.Before(end); c.now = c.now.Add(reachProbe) {
		if up {
			c.m.answered(true, c.now)
		}
		out = append(out, c.m.judge(c.now))
	}
	return out
}

// declines counts how many times the master went from taken to declined in
// seq, given whether it was declined before.
func declines(was bool, seq []bool) int {
	n := 0
	for _, lost := range seq {
		if lost && !was {
			n++
		}
		was = lost
	}
	return n
}

func TestMasterReachDeclinesAfterReachLostAndTakesBackAfterSteadyAnswers(t *testing.T) {
	c := newReachClock()
	assert.NotContains(t, c.run(time.Minute, true), true, "a master that answers is never declined")

	down := c.run(reachLost+reachProbe, false)
	assert.False(t, down[1], "declined before reachLost")
	assert.True(t, down[len(down)-1], "not declined after reachLost without an answer")

	up := c.run(reachRegain+2*reachProbe, true)
	assert.True(t, up[0], "taken back at its first answer")
	assert.True(t, up[len(up)-3], "taken back before it answered for reachRegain")
	assert.False(t, up[len(up)-1], "not taken back after it answered for reachRegain")
}

func TestMasterReachRestartsTheRegainAtAFailure(t *testing.T) {
	c := newReachClock()
	c.run(reachLost+reachProbe, false)
	c.run(reachRegain-reachProbe, true)
	c.m.answered(false, c.now) // a PING fails just before the regain ends
	assert.True(t, c.m.judge(c.now))
	seq := c.run(reachRegain-reachProbe, true)
	assert.NotContains(t, seq, false, "taken back without answering for reachRegain after the failure")
	assert.False(t, c.run(2*reachProbe, true)[1], "not taken back once it answered for reachRegain")
}

// A link that drops for a little over reachLost and answers for a moment,
// over and over, moved the master's slots away and back at each drop (an
// answer took the master back at once). Now the master is declined once,
// and stays so until the link holds.
func TestMasterReachHoldsAFlappingMasterDeclined(t *testing.T) {
	c := newReachClock()
	c.run(10*time.Second, true)
	var seq []bool
	for range 10 { // 10 × (4 s out, 2 s in): a minute
		seq = append(seq, c.run(4*time.Second, false)...)
		seq = append(seq, c.run(2*time.Second, true)...)
	}
	assert.Equal(t, 1, declines(false, seq), "declines of a flapping master in a minute")
	assert.True(t, seq[len(seq)-1], "taken back while it flaps")
	back := c.run(reachRegain+2*reachProbe, true)
	assert.False(t, back[len(back)-1], "not taken back once the link holds for reachRegain")
}

// A master declined again soon after being taken back must answer twice as
// long the next time, up to reachRegainMax; after reachFlap within reach it
// starts over.
func TestMasterReachDoublesTheRegainOfAMasterDeclinedAgainSoon(t *testing.T) {
	c := newReachClock()
	regainAfterCut := func() time.Duration {
		c.run(reachLost+reachProbe, false)
		took := time.Duration(0)
		for c.m.judge(c.now) {
			c.run(reachProbe, true)
			took += reachProbe
		}
		return took
	}
	var regains []time.Duration
	for range 6 {
		regains = append(regains, regainAfterCut())
	}
	// Each regain counts from the first answer, which the first probe up
	// both records and judges: reachRegain, then twice that, ...
	want := []time.Duration{reachRegain, 2 * reachRegain, 4 * reachRegain, 8 * reachRegain, reachRegainMax, reachRegainMax}
	for i := range want {
		assert.InDelta(t, want[i].Seconds(), regains[i].Seconds(), reachProbe.Seconds(), "regain %d", i+1)
	}
	c.run(reachFlap, true)
	assert.InDelta(t, reachRegain.Seconds(), regainAfterCut().Seconds(), reachProbe.Seconds(),
		"the regain after reachFlap within reach")
}
