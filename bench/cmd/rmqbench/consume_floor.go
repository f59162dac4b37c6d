package main

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The two-phase floor: what taking a message through a prepare set costs
// Redis at the least, to set beside RMQ's Redis CPU per consumed message in
// the same round. The consume scenario's backlog (the same members and
// priorities, spread over the bare yardstick's 64 keys by CRC32) is filled
// with pipelined ZADDs, not timed; then it is drained by one script call per
// batch and key, from as many connections as RMQ has threads, each call
// doing only what no two-phase consumer can leave out: it removes the
// previous batch of its key from the key's prepare set by that batch's
// score (the commit), reads the next batch with its scores (a consumer
// needs each message's priority), adds it to prepare and removes it from
// the store. No clock, fencing, timeouts, retries, check of what a commit
// removes, or guard against a lost reply; no listener.

const (
	vConsumeFloor    = "two-phase floor"
	vConsumeFloorOne = "two-phase floor, one priority"
)

// floorScript: KEYS[1] store, KEYS[2] prepare; ARGV[1] how many to pop (0:
// only commit), ARGV[2] the prepare score of the batch to commit ("": none),
// ARGV[3] this batch's prepare score. Returns {score, members} when the
// batch shares one score, else {"", member, score pairs}.
//
// It takes the shortcuts RMQ's pop takes that cost no safety, so that it is
// a floor: a batch of one score is read as its members and that score (a
// score formatted per member costs Redis more than two looks), and before
// Redis 7.2 a large batch goes into an empty prepare behind a member longer
// than a listpack holds, so that ZADD makes the skiplist at once instead of
// a listpack it then converts (see lua/cycle.lua).
var floorScript = redis.NewScript(`
if ARGV[2] ~= '' then redis.call('ZREMRANGEBYSCORE', KEYS[2], ARGV[2], ARGV[2]) end
local n = tonumber(ARGV[1])
if n == 0 then return {'', {}} end
local hi = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if not hi[2] then return {'', {}} end
local lo = redis.call('ZREVRANGE', KEYS[1], n - 1, n - 1, 'WITHSCORES')
if not lo[2] then lo = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES') end
local items, one, stride = nil, '', 2
if lo[2] == hi[2] then
  items, one, stride = redis.call('ZREVRANGE', KEYS[1], 0, n - 1), hi[2], 1
else
  items = redis.call('ZREVRANGE', KEYS[1], 0, n - 1, 'WITHSCORES')
end
local got = #items / stride
local add, na = {}, 0
for i = 1, #items, stride do
  add[na + 1], add[na + 2] = ARGV[3], items[i]
  na = na + 2
end
local big
if got > 128 and (redis.REDIS_VERSION_NUM or 0) < 0x070200 and redis.call('EXISTS', KEYS[2]) == 0 then
  big = string.rep('~', 1056)
  redis.call('ZADD', KEYS[2], 0, big)
end
redis.call('ZADD', KEYS[2], unpack(add))
if big then redis.call('ZREM', KEYS[2], big) end
redis.call('ZREMRANGEBYRANK', KEYS[1], -got, -1)
return {one, items}
`)

func floorPrepareKey(i int) string { return bareKeyOf(i) + ":prepare" }

// floorBatch is the floor's batch: RMQ's WithBatchSize, or its default (256).
func floorBatch(c *config) int {
	if c.rmqBatch > 0 {
		return c.rmqBatch
	}
	return 256
}

// consumeFloor fills the bare keys with e.n messages at priority prio(i) and
// times their drain through floorScript.
func consumeFloor(prio func(int) int64) func(ctx context.Context, e *env) (metrics, error) {
	return func(ctx context.Context, e *env) (metrics, error) {
		return runFloor(ctx, e, e.n, e.n, "c", prio)
	}
}

// runFloor fills the bare keys with size messages payload(tag, i) at
// priority prio(i) (not timed) and times the drain of at least sample of
// them through floorScript; it fails unless store and prepare then hold
// exactly what was not taken.
func runFloor(ctx context.Context, e *env, size, sample int, tag string, prio func(int) int64) (metrics, error) {
	r := newRedis(e.addr)
	defer r.Close()
	fillStart := time.Now()
	if err := fillBare(ctx, r, size, tag, prio); err != nil {
		return nil, err
	}
	m := metrics{mFillSeconds: time.Since(fillStart).Seconds()}
	if err := floorScript.Load(ctx, r).Err(); err != nil {
		return nil, err
	}
	meter := startMeter(ctx, e)
	popped, err := drainFloor(ctx, r, max(e.rmqThreads, 1), floorBatch(e.config), sample)
	if err != nil {
		return nil, err
	}
	if err := meter.stop(ctx, int(popped), m); err != nil {
		return nil, err
	}
	m[mConsumed] = float64(popped)
	left, err := floorLeft(ctx, r)
	if err == nil && (popped < int64(sample) || left != int64(size)-popped) {
		err = fmt.Errorf("two-phase floor: popped %d (sample %d) of %d, %d left in store and prepare", popped, sample, size, left)
	}
	return m, err
}

// drainFloor takes at least sample messages (or all) out of the bare keys
// through floorScript with batches of batch from conns goroutines
// (goroutine w serves the keys w, w+conns, … round-robin, committing each
// key's batch with its next call), commits what it took, and returns how
// many messages that was.
func drainFloor(ctx context.Context, r *redis.Client, conns, batch, sample int) (int64, error) {
	var popped, seq atomic.Int64
	err := parallel(conns, conns, func(w int) error {
		return drainFloorKeys(ctx, r, w, conns, batch, sample, &popped, &seq)
	})
	return popped.Load(), err
}

// drainFloorKeys is one goroutine of drainFloor: it serves keys w,
// w+conns, … until each is found empty or sample messages are taken, then
// commits the last batches of the keys it left unemptied.
func drainFloorKeys(ctx context.Context, r *redis.Client, w, conns, batch, sample int, popped, seq *atomic.Int64) error {
	var keys []int
	for k := w; k < bareSlots; k += conns {
		keys = append(keys, k)
	}
	pending := make(map[int]string) // key → prepare score of its uncommitted batch
	call := func(k, n int) (int, error) {
		score := strconv.FormatInt(seq.Add(1), 10)
		res, err := floorScript.EvalSha(ctx, r, []string{bareKeyOf(k), floorPrepareKey(k)}, n, pending[k], score).Slice()
		if err != nil {
			return 0, err
		}
		delete(pending, k)
		one, _ := res[0].(string)
		items, _ := res[1].([]any)
		got := len(items) // read each priority, as a consumer does
		if one != "" {
			if err := floorScore(one); err != nil {
				return 0, err
			}
		} else {
			got /= 2
			for i := 1; i < len(items); i += 2 {
				if err := floorScore(items[i]); err != nil {
					return 0, err
				}
			}
		}
		if got > 0 {
			pending[k] = score
		}
		return got, nil
	}
	for len(keys) > 0 && popped.Load() < int64(sample) {
		var live []int
		for _, k := range keys {
			got, err := call(k, batch)
			if err != nil {
				return err
			}
			if got > 0 {
				popped.Add(int64(got))
				live = append(live, k)
			}
		}
		keys = live
	}
	for k := range pending { // a key found empty has committed its last batch already
		if _, err := call(k, 0); err != nil {
			return err
		}
	}
	return nil
}

// floorScore parses a score of floorScript's reply as a priority.
func floorScore(v any) error {
	s, _ := v.(string)
	if _, err := strconv.ParseInt(s, 10, 64); err != nil {
		return fmt.Errorf("two-phase floor: score %q: %w", s, err)
	}
	return nil
}

const floorBacklogPrefix = "two-phase floor, "

func floorBacklogName(size int) string { return floorBacklogPrefix + backlogName(size) }

// backlogFloor fills the bare keys with size messages (priorities 17..1016)
// and times the drain of the backlog sample through floorScript.
func backlogFloor(ctx context.Context, e *env, size int) (metrics, error) {
	return runFloor(ctx, e, size, min(size, e.backlogSample), "b", spreadPriority)
}

// floorLeft returns how many entries the bare keys and their prepare sets hold.
func floorLeft(ctx context.Context, r *redis.Client) (int64, error) {
	keys := make([]string, 0, 2*bareSlots)
	for i := range bareSlots {
		keys = append(keys, bareKeyOf(i), floorPrepareKey(i))
	}
	return zcardSum(ctx, r, keys)
}
