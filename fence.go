package rmq

import (
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/rdb"
)

// fence returns the fence of s's cycles: its lease's, or none once a cycle
// of s was refused (fenced). Then s sends only restores, which any caller
// may: a restore hands back a message never handed to a listener, and only
// while its prepare entry is the one its pop wrote, so it touches no newer
// copy and nothing another owner holds. Without them, what a fenced worker
// had popped and not started would wait out the consume timeout and spend
// a retry (the last one: dead, never processed).
func (t *thread) fence(s *slotState) rdb.Fence {
	if s.fenced {
		return rdb.Fence{}
	}
	return fenceOf(s.lease)
}

// fencedOut lets go of s after one of its cycles was refused: the slot's
// owner record names another owner (owner, when the refusal said whom).
// The refused cycle settled nothing; of its outcomes only the restores go
// again, unfenced (fence), and its commits and rollbacks go to the consume
// timeout.
func (t *thread) fencedOut(s *slotState, owner string) {
	s.pending, s.lingering, s.moving, s.fenced = restoresOf(s.pending), false, 0, true
	t.sub.c.counters.fenced.Add(1)
	args := []any{"topic", t.sub.topic.Name, "slot", s.lease.Slot(), "token", s.lease.Token()}
	if owner != "" {
		args = append(args, "owner", owner)
	}
	t.sub.c.cfg.logger.Warn("rmq: slot is held by another owner; letting it go", args...)
	s.lease.Fenced()
}

// restoresOf returns the restores among outcomes, in place.
func restoresOf(outcomes []rdb.Outcome) []rdb.Outcome {
	kept := outcomes[:0]
	for _, o := range outcomes {
		if o.Action() == rdb.Restore {
			kept = append(kept, o)
		}
	}
	return kept
}

// fenceOf returns what the cycles of l show the slot's owner record.
func fenceOf(l *coordinator.Lease) rdb.Fence {
	if r := l.Record(); r != "" {
		return rdb.RecordFence(r)
	}
	return rdb.TokenFence(l.Token())
}
