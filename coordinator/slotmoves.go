package coordinator

import (
	"context"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/wait"
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

// whileMoving calls call until it returns anything but a refusal while the
// coordinator's hash slot moves, waiting such refusals out as the loops do
// (slotMoving logs them), until the row in moves has lasted the lease TTL
// (past it this worker's membership has expired anyway), or until ctx ends.
// It returns call's last error. The leave's calls use it, sharing one row:
// a worker stopping while a resharding splits the coordinator's keys hands
// its slots over once they are whole, not a lease TTL later.
func (r *redisRun) whileMoving(ctx context.Context, what string, moves *rdb.SlotMoves, call func() error) error {
	for {
		err := call()
		if err == nil {
			return nil
		}
		pause, ok := r.slotMoving(what, moves, err)
		if !ok || moves.Lasted(time.Now()) >= r.cfg.LeaseTTL || ctx.Err() != nil {
			return err
		}
		wait.Sleep(ctx, pause)
	}
}
