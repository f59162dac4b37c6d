package rdb

import (
	"time"

	"github.com/rmq-go/rmq/internal/backoff"
)

// SlotMoves follows the refusals of one loop's calls while the hash slot of
// their keys moves between a Cluster's masters, as a resharding moves it
// (the coordinator's keys, or a namespace's presence entry: one hash tag
// per namespace): while its keys are split between the two, a script on
// several of them is refused with TRYAGAIN, or redirected further than
// go-redis follows (SlotMoving). Both masters are well, so such a refusal is
// no failure: the loop calls again soon (backoff.SlotMove, 10 ms doubling
// to a second) and logs it at Debug, and at Warn only once refusals in a
// row have lasted warnAfter (a migration left open, which redis-cli
// --cluster fix closes), then again every warnAfter. The zero value has
// seen no refusal.
type SlotMoves struct {
	since  time.Time // the first refusal in a row; zero while none
	n      int       // refusals in a row
	warned time.Time // when the last Warn was due
}

// Refused records err if it is such a refusal at now, and reports whether
// it was, the pause before the next call, and how to log it: debug for the
// first of a row, warn when warnAfter has passed since the row began or
// since the last warn.
func (m *SlotMoves) Refused(err error, now time.Time, warnAfter time.Duration) (pause time.Duration, debug, warn, ok bool) {
	if !SlotMoving(err) {
		return 0, false, false, false
	}
	m.n++
	if m.since.IsZero() {
		m.since, m.warned = now, now
		debug = true
	}
	if now.Sub(m.warned) >= warnAfter {
		m.warned = now
		warn = true
	}
	return backoff.SlotMove.Delay(m.n), debug, warn, true
}

// Reset ends a row of refusals: a call went through, or failed otherwise.
func (m *SlotMoves) Reset() { *m = SlotMoves{} }

// Lasted is how long the current row of refusals has lasted at now.
func (m *SlotMoves) Lasted(now time.Time) time.Duration {
	if m.since.IsZero() {
		return 0
	}
	return now.Sub(m.since)
}
