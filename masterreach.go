package rmq

import "time"

// masterReach is what the reach watch (reach.go) knows of one master: when
// it last answered, and whether its slots are declined now. A master that
// has not answered for reachLost is declined. It is taken back only once it
// has answered every PING for its regain time (reachRegain at first), so a
// link that drops and answers by turns does not move the master's slots
// back and forth at each answer: each move is a handover. A master declined
// again within reachFlap of being taken back must answer twice as long the
// next time, up to reachRegainMax; one that stays within reach for
// reachFlap starts over from reachRegain. Taking a master back late costs
// no service: while this process declines its slots, others serve them.
type masterReach struct {
	lastOK   time.Time     // its last answer, or when it was first pinged
	lost     bool          // its slots declined now
	steady   time.Time     // since when it has answered every PING (zero: not since its last failure)
	regain   time.Duration // how long it must answer so to be taken back
	regained time.Time     // when it was last taken back (zero: never)
}

const (
	reachRegain    = 5 * time.Second // how long a declined master must answer at first to be taken back
	reachRegainMax = time.Minute     // the longest it must
	reachFlap      = time.Minute     // declined again within this of being taken back: it must answer twice as long
)

// newMasterReach returns the state of a master first pinged at now.
func newMasterReach(now time.Time) *masterReach {
	return &masterReach{lastOK: now, regain: reachRegain}
}

// answered records a PING's outcome, received at now.
func (m *masterReach) answered(ok bool, now time.Time) {
	if !ok {
		m.steady = time.Time{}
		return
	}
	m.lastOK = now
	if m.steady.IsZero() {
		m.steady = now
	}
}

// judge decides, at now, whether the master's slots are declined, and
// reports it. Between two PINGs answered a master is not judged as
// answering for longer than its last answer allows: one not heard for two
// probes starts its regain over.
func (m *masterReach) judge(now time.Time) bool {
	silent := now.Sub(m.lastOK)
	if silent >= 2*reachProbe {
		m.steady = time.Time{}
	}
	switch {
	case silent >= reachLost && !m.lost:
		m.lost = true
		if !m.regained.IsZero() && now.Sub(m.regained) < reachFlap {
			m.regain = min(2*m.regain, reachRegainMax)
		} else {
			m.regain = reachRegain
		}
	case m.lost && !m.steady.IsZero() && now.Sub(m.steady) >= m.regain:
		m.lost, m.regained = false, now
	}
	return m.lost
}
