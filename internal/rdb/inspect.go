package rdb

import (
	"context"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// retryScale is the factor of a retry score: due ms * retryScale + retries
// left (RETRY_SCALE in cycle.lua).
const retryScale = 32

// PendingEntry is a message waiting in a slot, its score decoded.
type PendingEntry struct {
	Member []byte
	// RetriesLeft is MaxRetries for a message never delivered, fewer after
	// failed deliveries.
	RetriesLeft int
	// DueMs is when it is due, Unix ms: the due time of a fresh message on a
	// time topic, or the end of a retry backoff; 0 for due at once.
	DueMs int64
	// Priority is a fresh message's priority on a Priority topic, else 0.
	Priority int64
	// Retrying is true while the message waits out a retry backoff.
	Retrying bool
}

// promoteLimit is the most retries whose wait is over that one cycle moves
// back to store (SWEEP_LIMIT in cycle.lua).
const promoteLimit = 256

// Pending implements Broker: the first limit members of store in the order
// the cycle pops them (time topics lowest score first, Priority highest
// first), then the first limit of retry, soonest first, and every retry
// whose wait is over by nowMs that the next cycle moves to store (up to
// promoteLimit; they are popped by retries left, not by due time); one
// round trip (two on a RangeMerge topic whose retries fill the limit:
// mergedIntoRetry).
func (b *redisBroker) Pending(ctx context.Context, keys SlotKeys, limit int64, priority, merging bool, nowMs int64) ([]PendingEntry, error) {
	p := b.pipeline()
	pipe := p.On(ctx, keys.Store) // every key of a slot shares its hash tag
	var store *redis.ZSliceCmd
	if priority {
		store = pipe.ZRevRangeWithScores(ctx, keys.Store, 0, limit-1)
	} else {
		store = pipe.ZRangeWithScores(ctx, keys.Store, 0, limit-1)
	}
	retry := pipe.ZRangeWithScores(ctx, keys.Retry, 0, limit-1)
	ready := pipe.ZRangeByScoreWithScores(ctx, keys.Retry, &redis.ZRangeBy{Min: "-inf",
		Max: strconv.FormatInt(nowMs*retryScale+retryScale-1, 10), Count: promoteLimit})
	if err := p.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]PendingEntry, 0, len(store.Val())+len(retry.Val()))
	merged, err := b.mergedIntoRetry(ctx, keys, store.Val(), retry.Val(), limit, merging)
	if err != nil {
		return nil, err
	}
	for _, z := range store.Val() {
		if m, _ := z.Member.(string); !merged[m] {
			out = append(out, storeEntry(z, priority))
		}
	}
	for _, z := range retry.Val() {
		out = append(out, retryEntry(z))
	}
	// the ready ones not among the first limit: past them, in due order too
	for _, z := range ready.Val()[min(len(ready.Val()), len(retry.Val())):] {
		out = append(out, retryEntry(z))
	}
	return out, nil
}

// mergedIntoRetry returns, on a RangeMerge topic (merging), the members of
// store that also wait out a retry's backoff: a copy sent meanwhile stays in
// store, and the consumer's pop leaves it there and delivers it once, with
// the retry (it merges into it). The first limit retries are at hand; past
// them, one more read asks retry about the store members.
func (b *redisBroker) mergedIntoRetry(ctx context.Context, keys SlotKeys, store, retry []redis.Z, limit int64, merging bool) (map[string]bool, error) {
	if !merging || len(store) == 0 || len(retry) == 0 {
		return nil, nil
	}
	merged := make(map[string]bool)
	for _, z := range retry {
		m, _ := z.Member.(string)
		merged[m] = true
	}
	if int64(len(retry)) < limit {
		return merged, nil // every retry is at hand
	}
	members := make([]string, len(store))
	for i, z := range store {
		members[i], _ = z.Member.(string)
	}
	scores, err := b.rdb.ZMScore(ctx, keys.Retry, members...).Result()
	if err != nil {
		return nil, err
	}
	for i, sc := range scores {
		if sc != 0 {
			merged[members[i]] = true
		}
	}
	return merged, nil
}

// storeEntry decodes a store member: a score up to MaxRetries is the retries
// left of a message due at once; above it, a due time or a priority.
func storeEntry(z redis.Z, priority bool) PendingEntry {
	m, _ := z.Member.(string)
	e := PendingEntry{Member: []byte(m), RetriesLeft: MaxRetries}
	switch {
	case z.Score <= MaxRetries:
		e.RetriesLeft = int(math.Floor(z.Score))
	case priority:
		e.Priority = int64(z.Score)
	default:
		e.DueMs = int64(z.Score)
	}
	return e
}

// retryEntry decodes a retry member: due ms * retryScale + retries left.
func retryEntry(z redis.Z) PendingEntry {
	m, _ := z.Member.(string)
	s := int64(z.Score)
	return PendingEntry{Member: []byte(m), DueMs: s / retryScale, RetriesLeft: int(s % retryScale), Retrying: true}
}

// DeleteDead implements Broker.
func (b *redisBroker) DeleteDead(ctx context.Context, keys SlotKeys, member []byte) (bool, error) {
	n, err := b.rdb.ZRem(ctx, keys.Dead, member).Result()
	return n > 0, err
}
