package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// idleCheckSlots is how many slots one EXISTS of AnyWaiting covers on a
// single node (three keys each).
const idleCheckSlots = 300

// AnyWaiting implements Broker: whether any of slots holds a message in
// store, prepare or retry. On a single node it asks with one EXISTS per
// idleCheckSlots slots, so a consumer's idle slots cost Redis a command per
// few hundred of them per look, in one pipeline; on a Cluster, whose slots
// live under different hash tags, with one EXISTS per slot, in one pipeline
// per master on that master's own connections (RoutedPipeline). A Cluster
// slot whose hash slot migrates between two masters may have its EXISTS
// refused (TRYAGAIN: some of its keys missing on both); that is no failure,
// and it counts as empty: wake-ups are still published on the slot's
// channel, and its channel's move to the new master, which follows the
// slot's, wakes it (shardsub.go). The other slots' answers stand, and so
// they do when a master fails: a slot found waiting on another answers true;
// the failure is returned only when none was.
func (b *redisBroker) AnyWaiting(ctx context.Context, slots []SlotKeys) (bool, error) {
	if len(slots) == 0 {
		return false, nil
	}
	p := b.pipeline()
	var cmds []*redis.IntCmd
	if b.topo != nil {
		cmds = make([]*redis.IntCmd, len(slots))
		for i, k := range slots {
			cmds[i] = p.On(ctx, k.Store).Exists(ctx, k.Store, k.Prepare, k.Retry)
		}
	} else {
		pipe := p.On(ctx, "")
		for start := 0; start < len(slots); start += idleCheckSlots {
			chunk := slots[start:min(start+idleCheckSlots, len(slots))]
			keys := make([]string, 0, 3*len(chunk))
			for _, k := range chunk {
				keys = append(keys, k.Store, k.Prepare, k.Retry)
			}
			cmds = append(cmds, pipe.Exists(ctx, keys...))
		}
	}
	_ = p.Exec(ctx) // each command carries its own error
	moving := 0
	var failed error
	for _, c := range cmds {
		switch err := c.Err(); {
		case err == nil:
			if c.Val() > 0 {
				return true, nil
			}
		case SlotMoving(err): // Exec asked for a reload of the slot map
			moving++
		default:
			if failed == nil {
				failed = err
			}
		}
	}
	if failed != nil {
		return false, failed
	}
	if moving > 0 {
		b.log.Debug("rmq: idle sweep: slots whose hash slot moves were refused; their wake-ups, and the "+
			"resubscription that follows the move, stand for them", "slots", moving)
	}
	return false, nil
}
