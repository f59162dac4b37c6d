package coordinator

import (
	"time"

	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/rdb"
)

// slotMoves follows the refusals of one loop's calls while the hash slot of
// the coordinator's keys (one hash tag per namespace) moves between a
// Cluster's masters, as a resharding moves it: while its keys are split
// between the two, a script on several of them is refused with TRYAGAIN,
// or redirected further than go-redis follows (rdb.SlotMoving). Both
// masters are well, so such a refusal is no failure: the loop calls again
// soon (backoff.SlotMove, 10 ms doubling to a second) and logs it at Debug,
// and at Warn only once refusals in a row have lasted warnAfter (a
// migration left open, which redis-cli --cluster fix closes), then again
// every warnAfter.
type slotMoves struct {
	since  time.Time // the first refusal in a row; zero while none
	n      int       // refusals in a row
	warned time.Time // when the last Warn was due
}

// refused records err if it is such a refusal at now, and reports whether
// it was, the pause before the next call, and how to log it: debug for the
// first of a row, warn when warnAfter has passed since the row began or
// since the last warn.
func (m *slotMoves) refused(err error, now time.Time, warnAfter time.Duration) (pause time.Duration, debug, warn, ok bool) {
	if !rdb.SlotMoving(err) {
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

// reset ends a row of refusals: a call went through, or failed otherwise.
func (m *slotMoves) reset() { *m = slotMoves{} }

// lasted is how long the current row of refusals has lasted at now.
func (m *slotMoves) lasted(now time.Time) time.Duration {
	if m.since.IsZero() {
		return 0
	}
	return now.Sub(m.since)
}

// slotMoving has the loop of what ("heartbeat", "reconcile") look at err: if
// it is a refusal while the coordinator's hash slot moves (moves.refused),
// it logs it as that says and returns the pause before the next call, at
// most the heartbeat interval; ok is false for any other error. The leases
// are at risk once refusals have lasted half the lease TTL: that is when
// the first Warn comes.
func (r *redisRun) slotMoving(what string, moves *slotMoves, err error) (pause time.Duration, ok bool) {
	now := time.Now()
	pause, debug, warn, ok := moves.refused(err, now, r.cfg.LeaseTTL/2)
	switch {
	case !ok:
		return 0, false
	case warn:
		r.log.Warn("rmq: redis coordinator: "+what+" refused while the coordinator's hash slot moves, "+
			"for a while now (a migration left open? redis-cli --cluster fix)",
			"for", moves.lasted(now).Round(time.Millisecond), "err", err)
	case debug:
		r.log.Debug("rmq: redis coordinator: "+what+" refused while the coordinator's hash slot moves; "+
			"trying again soon", "err", err)
	}
	return min(pause, r.interval()), true
}
