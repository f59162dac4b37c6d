package coordinator

import (
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// slotMoving has the loop of what ("heartbeat", "reconcile") look at err: if
// it is a refusal while the coordinator's hash slot moves (moves.Refused),
// it logs it as that says and returns the pause before the next call, at
// most the heartbeat interval; ok is false for any other error. The leases
// are at risk once refusals have lasted half the lease TTL: that is when
// the first Warn comes.
func (r *redisRun) slotMoving(what string, moves *rdb.SlotMoves, err error) (pause time.Duration, ok bool) {
	now := time.Now()
	pause, debug, warn, ok := moves.Refused(err, now, r.cfg.LeaseTTL/2)
	switch {
	case !ok:
		return 0, false
	case warn:
		r.log.Warn("rmq: redis coordinator: "+what+" refused while the coordinator's hash slot moves, "+
			"for a while now (a migration left open? redis-cli --cluster fix)",
			"for", moves.Lasted(now).Round(time.Millisecond), "err", err)
	case debug:
		r.log.Debug("rmq: redis coordinator: "+what+" refused while the coordinator's hash slot moves; "+
			"trying again soon", "err", err)
	}
	return min(pause, r.interval()), true
}
