package rmq

import (
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// commitLinger is how long the commits of a batch that emptied its slot may
// wait for the slot's next cycle. At low rates a slot's next message is
// usually due within it, and the commits then go with the cycle that pops
// that message instead of in a script call of their own: one call per
// message instead of two. A crash in that time repeats those messages after
// the consume timeout (duplicates, never a loss).
const commitLinger = 250 * time.Millisecond

// afterDelivery returns when to look at s again after delivering a batch of
// res, and whether its pending outcomes may wait until then. At once when
// the batch came back full (more may be due) or an outcome is not a commit
// (a retry's wait starts when Redis hears of it); else at the slot's next due
// time, at most commitLinger (and a tenth of the consume timeout) away.
func (t *thread) afterDelivery(s *slotState, res rdb.CycleResult, now time.Time) (time.Time, bool) {
	if res.NextMs >= 0 && res.NextMs*1000 <= res.NowUs {
		return time.Time{}, false
	}
	for _, o := range s.pending {
		if o.Action() != rdb.Commit {
			return time.Time{}, false
		}
	}
	next, latest := t.nextLook(res, now), now.Add(min(commitLinger, t.sub.c.cfg.consumeTimeout/10))
	if next.After(latest) {
		next = latest
	}
	return next, true
}
