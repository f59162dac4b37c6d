package rmq

import (
	"math/rand/v2"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// commitLinger is how long the commits of a batch may wait for the slot's
// next cycle when the slot's next message falls due within it: at low rates
// the commits then go with the cycle that pops that message instead of in a
// script call of their own, one call per message instead of two. A crash in
// that time repeats those messages after the consume timeout (duplicates,
// never a loss).
const commitLinger = 250 * time.Millisecond

// afterDelivery returns when to look at s again after delivering a batch of
// res, and whether its pending outcomes may wait until then: only when the
// slot's next message falls due within commitLinger (and a tenth of the
// consume timeout) and every outcome is a commit (a retry's wait starts
// when Redis hears of it); the commits then go with the pop of that message.
// Otherwise it looks again at once, and that cycle settles them: a slot
// with nothing due soon (emptied, or next due later) gains nothing by
// waiting, and the end of a burst would leave its last commits unsettled.
//
// The next message's due time counts from recv, when the pop's reply came
// (the script's clock is the pop's), not from now, after the listeners ran:
// a listener's time must not make that message late.
func (t *thread) afterDelivery(s *slotState, res rdb.CycleResult, recv, now time.Time) (time.Time, bool) {
	if res.NextMs < 0 || res.NextMs*1000 <= res.NowUs {
		return time.Time{}, false
	}
	for _, o := range s.pending {
		if o.Action() != rdb.Commit {
			return time.Time{}, false
		}
	}
	next := t.nextLook(res, recv)
	if next.After(now.Add(min(commitLinger, t.sub.c.cfg.consumeTimeout/10))) {
		return time.Time{}, false
	}
	return next, true
}

// nextLook converts the script's "next due" (Redis ms) into a local time,
// bounded by the idle poll (with jitter, so idle slots do not poll in step).
func (t *thread) nextLook(res rdb.CycleResult, now time.Time) time.Time {
	poll := t.sub.c.cfg.idlePoll
	poll -= time.Duration(rand.Int64N(int64(poll)/5 + 1))
	if res.NextMs < 0 {
		return now.Add(poll)
	}
	// From the µs clock: waking at the start of the due millisecond, not up
	// to a millisecond early (which would cost a futile cycle and then be late).
	// In µs before the Duration: a due time centuries ahead (up to 2^50 ms)
	// overflows a Duration's ns, and would read as due at once.
	if us := res.NextMs*1000 - res.NowUs; us < poll.Microseconds() {
		return now.Add(time.Duration(us) * time.Microsecond)
	}
	return now.Add(poll)
}
