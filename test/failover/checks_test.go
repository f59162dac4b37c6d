package failover_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// check asserts the run's guarantees (see the package doc).
func (r *failoverRun) check(rep *runReport) {
	t := r.t
	for i, s := range rep.slots {
		require.True(t, s.preKill, "slot %d had no acknowledged Send and delivery before the kill: the run did not start healthy", i)
	}

	// Every slot sends and delivers again soon after the promotion. With the
	// replica ack the promoted replica has no replica of its own until the
	// killed node rejoins (after the bound), so no Send of its slots can be
	// acknowledged before: those slots are held instead to acknowledged Sends
	// soon after the rejoined replica is online.
	var noSend, noDelivery []string
	for i, s := range rep.slots {
		desc := fmt.Sprintf("slot %d (%s)", i, s.master)
		switch {
		case r.v.replicaAck && s.killed:
			if s.firstOKRejoined == never || s.firstOKRejoined > recoveryBound {
				noSend = append(noSend, fmt.Sprintf("slot %d (%s, killed): %s after the rejoined replica was online",
					i, s.master, ms(s.firstOKRejoined)))
			}
			continue
		case s.killed:
			desc = fmt.Sprintf("slot %d (%s, killed)", i, s.master)
		}
		if s.firstOK == never || s.firstOK > recoveryBound {
			noSend = append(noSend, desc+": "+ms(s.firstOK))
		}
		if s.firstIn == never || s.firstIn > recoveryBound {
			noDelivery = append(noDelivery, desc+": "+ms(s.firstIn))
		}
	}
	if r.v.replicaAck {
		assert.NotEqual(t, never, r.replicaOnline, "the killed node, restarted, never became an online replica of %s", r.newAddr)
	}
	assert.Zero(t, len(noSend), "%d slots had no acknowledged Send within %v of the promotion (or of the rejoin): %s",
		len(noSend), recoveryBound, strings.Join(noSend, "; "))
	assert.Zero(t, len(noDelivery), "%d slots had no delivery within %v of the promotion: %s",
		len(noDelivery), recoveryBound, strings.Join(noDelivery, "; "))

	// The slots of the masters that did not die keep their pace, unless the
	// deployment refuses every command meanwhile (then it is reported only),
	// and keep it after the promotion, while the promoted master's slots
	// catch up. (That a master whose WAITs time out holds back no other
	// master's Sends is proven apart, in internal/rdb: over these windows a
	// stall of a second or two would be made up by the backlog it leaves.)
	for _, g := range rep.groups {
		if g.killed || !g.preWindowOK || r.d.refusesUncovered {
			continue
		}
		if g.outageWindow > 0 {
			assert.True(t, g.outage >= keptRate*g.pre,
				"slots %v of surviving master %s delivered %.0f/s from the kill to the promotion, below %.0f%% of their %.0f/s before the kill",
				g.slots, g.master, g.outage, 100*keptRate, g.pre)
		}
		if g.afterWindow >= time.Second {
			assert.True(t, g.after >= keptRate*g.pre,
				"slots %v of surviving master %s delivered %.0f/s from the promotion until the producers stopped, below %.0f%% of their %.0f/s before the kill",
				g.slots, g.master, g.after, 100*keptRate, g.pre)
		}
	}

	// What was acknowledged after the promotion is delivered.
	assert.Zero(t, len(rep.lostAfterPromo), "%d messages acknowledged after the promotion were never delivered, e.g. %v",
		len(rep.lostAfterPromo), firstSeqs(rep.lostAfterPromo, 10))

	// With the replica ack, nothing acknowledged is lost.
	if r.v.replicaAck {
		assert.Zero(t, len(rep.lost), "with WithReplicaAck, %d acknowledged messages were never delivered "+
			"(%d acknowledged before the kill, %d during the outage), e.g. %v",
			len(rep.lost), rep.lostBeforeKill, rep.lostOutage, firstSeqs(rep.lost, 10))
	}
}
