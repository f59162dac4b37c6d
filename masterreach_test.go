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

// A master is declined once it has not answered for reachLost, and taken
// back at its next answer, as long as it was not declined again soon.
func TestMasterReachDeclinesAfterReachLostAndTakesBackAtTheNextAnswer(t *testing.T) {
	c := newReachClock()
	assert.NotContains(t, c.run(time.Minute, true), true, "a master that answers is never declined")

	down := c.run(reachLost+reachProbe, false)
	assert.False(t, down[1], "declined before reachLost")
	assert.True(t, down[len(down)-1], "not declined after reachLost without an answer")
	assert.False(t, c.run(reachProbe, true)[0], "not taken back at its next answer")
}

// cutAndRegain cuts the master off for reachLost and a probe, and returns
// how long it then answered before it was taken back.
func (c *reachClock) cutAndRegain() time.Duration {
	c.run(reachLost+reachProbe, false)
	took := time.Duration(0)
	for c.run(reachProbe, true)[0] {
		took += reachProbe
	}
	return took
}

// A master declined again within reachFlap of being taken back must answer
// for reachRegain, then twice as long each time, up to reachRegainMax; after
// reachFlap within reach it is taken back at its next answer again.
func TestMasterReachHoldsAMasterDeclinedAgainSoonLonger(t *testing.T) {
	c := newReachClock()
	var regains []time.Duration
	for range 7 {
		regains = append(regains, c.cutAndRegain())
	}
	want := []time.Duration{0, reachRegain, 2 * reachRegain, 4 * reachRegain, 8 * reachRegain, reachRegainMax, reachRegainMax}
	assert.Equal(t, want, regains, "how long the master answered before it was taken back, cut after cut")
	c.run(reachFlap, true)
	assert.Zero(t, c.cutAndRegain(), "the regain after reachFlap within reach")
}

// A failure while a master declined again must answer restarts its
// regain.
func TestMasterReachRestartsTheRegainAtAFailure(t *testing.T) {
	c := newReachClock()
	c.cutAndRegain()
	c.run(reachLost+reachProbe, false) // declined again: reachRegain
	c.run(reachRegain-reachProbe, true)
	c.m.answered(false, c.now) // a PING fails just before the regain ends
	assert.True(t, c.m.judge(c.now))
	seq := c.run(reachRegain-reachProbe, true)
	assert.NotContains(t, seq, false, "taken back without answering for reachRegain after the failure")
	assert.False(t, c.run(2*reachProbe, true)[1], "not taken back once it answered for reachRegain")
}

// A link that drops for a little over reachLost and answers for a moment,
// over and over, moved the master's slots away and back at each drop (an
// answer took the master back at once). Now the master is declined twice:
// the second time it is held until the link holds.
func TestMasterReachHoldsAFlappingMasterDeclined(t *testing.T) {
	c := newReachClock()
	c.run(10*time.Second, true)
	var seq []bool
	for range 10 { // 10 × (4 s out, 2 s in): a minute
		seq = append(seq, c.run(4*time.Second, false)...)
		seq = append(seq, c.run(2*time.Second, true)...)
	}
	assert.Equal(t, 2, declines(false, seq), "declines of a flapping master in a minute")
	assert.True(t, seq[len(seq)-1], "taken back while it flaps")
	back := c.run(reachRegain+2*reachProbe, true)
	assert.False(t, back[len(back)-1], "not taken back once the link holds for reachRegain")
}
