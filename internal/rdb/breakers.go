package rdb

import (
	"context"
	"strconv"
	"time"
)

// BreakerShare is one process's breaker state of one topic, as it shares
// it: State "" deletes the process's field.
type BreakerShare struct {
	Topic string
	State string
	AtMs  int64 // when, Unix ms by the process's clock
}

// breakerStatesTTL is how long a topic's breaker states outlive their last
// write: the fields of processes that died with their breaker open go with
// the key once no process writes it any more.
const breakerStatesTTL = time.Minute

// ShareBreakers implements Broker: HSET (with the key's expiry renewed) or
// HDEL per topic, in one pipeline (every key shares the namespace's hash
// tag), routed (RoutedPipeline).
func (b *redisBroker) ShareBreakers(ctx context.Context, process string, states []BreakerShare) error {
	if len(states) == 0 {
		return nil
	}
	p := b.pipeline()
	for _, s := range states {
		key := b.keys.BreakerStates(s.Topic)
		pipe := p.On(ctx, key)
		if s.State == "" {
			pipe.HDel(ctx, key, process)
			continue
		}
		pipe.HSet(ctx, key, process, s.State+"|"+strconv.FormatInt(s.AtMs, 10))
		pipe.PExpire(ctx, key, breakerStatesTTL)
	}
	return p.Exec(ctx)
}

// BreakerStates implements Broker, reading on the master (masterread.go).
func (b *redisBroker) BreakerStates(ctx context.Context, topic string) (map[string]string, error) {
	return hashOnMaster(ctx, b.rdb, b.keys.BreakerStates(topic))
}
