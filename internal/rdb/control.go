package rdb

import (
	"context"
	"fmt"
	"time"
)

// Controls returns every topic's stored flow control (topic → JSON), read
// on the master (masterread.go).
func (b *redisBroker) Controls(ctx context.Context) (map[string]string, error) {
	return hashOnMaster(ctx, b.rdb, b.keys.Controls())
}

// SetControl stores topic's flow control ("" deletes it) and announces the
// change on the control channel, through the controls' master (publishAt).
func (b *redisBroker) SetControl(ctx context.Context, topic, control string) error {
	var err error
	if control == "" {
		err = b.rdb.HDel(ctx, b.keys.Controls(), topic).Err()
	} else {
		err = b.rdb.HSet(ctx, b.keys.Controls(), topic, control).Err()
	}
	if err != nil {
		return err
	}
	return publishAt(ctx, b.rdb, b.keys.Controls(), b.keys.ControlChannel(), topic)
}

// DeleteSlot implements Broker with deleteslot.lua: the emptiness check and
// the deletion are one step, so a message stored meanwhile is never deleted
// unseen. Every key of a slot shares its hash tag.
func (b *redisBroker) DeleteSlot(ctx context.Context, keys SlotKeys, force bool) (bool, SlotCounts, error) {
	flag := "0"
	if force {
		flag = "1"
	}
	res, err := runOnSlot(ctx, b.rdb, deleteSlotScript, []string{keys.Store, keys.Retry, keys.Prepare, keys.Dead, keys.Owner}, flag).Int64Slice()
	if err != nil {
		return false, SlotCounts{}, err
	}
	if len(res) != 5 {
		return false, SlotCounts{}, fmt.Errorf("rdb: deleteslot.lua returned %d values, want 5", len(res))
	}
	return res[0] == 1, SlotCounts{Store: res[1], Retry: res[2], Prepare: res[3], Dead: res[4]}, nil
}

// DeleteTopic removes topic's records beside its slots (assignment, shared
// metrics of the last two hours, breaker states, flow control) without
// SCAN, the names being known, in one routed pipeline (RoutedPipeline);
// then, once they are gone, its definition.
func (b *redisBroker) DeleteTopic(ctx context.Context, topic string) error {
	k := b.keys
	p := b.pipeline()
	pipe := p.On(ctx, k.Topics())
	// One key per DEL: a multi-key DEL is refused (TRYAGAIN) while the
	// namespace's hash slot migrates and some of its keys are missing.
	pipe.Del(ctx, k.Assignment(topic))
	pipe.Del(ctx, k.Stats(topic))
	pipe.Del(ctx, k.BreakerStates(topic))
	now := time.Now().Unix() / 60
	for m := now - int64(statsMinuteTTL/time.Minute) - 1; m <= now+1; m++ {
		pipe.Del(ctx, k.StatsMinute(topic, m))
	}
	pipe.HDel(ctx, k.Controls(), topic+"|paused", topic+"|limit")
	if err := p.Exec(ctx); err != nil {
		return err
	}
	return b.rdb.HDel(ctx, k.Topics(), topic).Err()
}

// PresenceTopics returns the topics of each presence entry, read on the
// master (masterread.go).
func (b *redisBroker) PresenceTopics(ctx context.Context) (map[string]string, error) {
	return hashOnMaster(ctx, b.rdb, b.keys.PresenceTopics())
}
