package rdb

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// StatsDelta is what one client adds to a topic's shared metrics: field →
// increment, into the all-time hash and the hash of the given minute.
type StatsDelta struct {
	Topic  string
	Minute int64 // Unix minutes
	Fields map[string]int64
}

// StatsBatch is one flush of a client's metrics. A client numbers its
// batches 1, 2, 3, … and sends a batch whose reply it did not get again,
// unchanged, before any newer one: AddStats then adds it once, even when the
// lost reply's call had added it.
type StatsBatch struct {
	Client string // the client's id, random, the same for all its batches
	Seq    int64  // the batch's number
	Deltas []StatsDelta
}

// statsMinuteTTL is how long a minute's hash is kept, and a client's mark
// after its last batch.
const statsMinuteTTL = 2 * time.Hour

// AddStats adds a batch in one script call (every key shares the namespace's
// hash tag), unless the client's mark says it was added already; it reports
// whether it added it now.
func (b *redisBroker) AddStats(ctx context.Context, batch StatsBatch) (bool, error) {
	keys := []string{b.keys.StatsMark(batch.Client)}
	args := []any{batch.Seq, statsMinuteTTL.Milliseconds(), int64(statsMinuteTTL.Seconds())}
	for _, d := range batch.Deltas {
		keys = append(keys, b.keys.Stats(d.Topic), b.keys.StatsMinute(d.Topic, d.Minute))
		args = append(args, len(d.Fields))
		for f, n := range d.Fields {
			args = append(args, f, n)
		}
	}
	// EVAL, not EVALSHA: at one call every few seconds, sending the script's
	// text costs nothing worth saving, and a server that has not seen it yet
	// (each master, after each restart or failover) answers no NOSCRIPT
	// error, which error-rate monitors would count.
	added, err := statsScript.Eval(ctx, b.rdb, keys, args...).Int64()
	return added == 1, err
}

// Stats returns topic's all-time shared metrics and those of the minutes
// from..to (Unix minutes, both included), oldest first.
func (b *redisBroker) Stats(ctx context.Context, topic string, from, to int64) (map[string]int64, []map[string]int64, error) {
	p := b.pipeline()
	pipe := p.On(ctx, b.keys.Stats(topic))
	total := pipe.HGetAll(ctx, b.keys.Stats(topic))
	var minutes []*redis.MapStringStringCmd
	for m := from; m <= to; m++ {
		minutes = append(minutes, pipe.HGetAll(ctx, b.keys.StatsMinute(topic, m)))
	}
	if err := p.Exec(ctx); err != nil {
		return nil, nil, err
	}
	out := make([]map[string]int64, len(minutes))
	for i, m := range minutes {
		out[i] = parseCounts(m.Val())
	}
	return parseCounts(total.Val()), out, nil
}

func parseCounts(m map[string]string) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k], _ = strconv.ParseInt(v, 10, 64)
	}
	return out
}
