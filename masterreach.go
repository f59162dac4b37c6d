package rmq

import "time"

// masterReach is what the reach watch (reach.go) knows of one master: when
// it last answered, and whether its slots are declined now. A master that
// has not answered for reachLost is declined, and taken back at its next
// answer. One declined again within reachFlap of being taken back is taken
// back only once it has answered every PING for reachRegain, twice that
// the next time, and so on up to reachRegainMax, so that a link that drops
// and answers by turns does not move the master's slots away and back at
// each answer (each move is a handover); one that stays within reach for
// reachFlap is taken back at its next answer again. A single outage costs
// no more than before; taking a flapping master back late costs no
// service, since others serve its slots while this process declines them.
type masterReach struct {
	lastOK   time.Time     // its last answer, or when it was first pinged
	lost     bool          // its slots declined now
	steady   time.Time     // since when it has answered every PING (zero: not since its last failure)
	regain   time.Duration // how long it must answer so to be taken back (0: its next answer)
	regained time.Time     // when it was last taken back (zero: never)
}

const (
	reachRegain    = 5 * time.Second // how long a master declined again soon must answer, at first
	reachRegainMax = time.Minute     // the longest it must
	reachFlap      = time.Minute     // declined again within this of being taken back: it must answer longer
)

// newMasterReach returns the state of a master first pinged at now.
func newMasterReach(now time.Time) *masterReach {
	return &masterReach{lastOK: now}
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
			m.regain = min(max(2*m.regain, reachRegain), reachRegainMax)
		} else {
			m.regain = 0
		}
	case m.lost && !m.steady.IsZero() && now.Sub(m.steady) >= m.regain:
		m.lost, m.regained = false, now
	}
	return m.lost
}
