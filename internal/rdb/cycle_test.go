package rdb

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
)

// fixture is one slot of one topic on one backend.
type fixture struct {
	t    *testing.T
	b    testenv.Backend
	br   Broker
	keys SlotKeys
	ctx  context.Context
}

func newFixture(t *testing.T, b testenv.Backend) *fixture {
	ks := NewKeyspace(testenv.Namespace(t, b))
	return &fixture{t: t, b: b, br: New(b.Redis, ks), keys: ks.Slot("topic", 3), ctx: context.Background()}
}

func (f *fixture) zadd(key string, score float64, member string) {
	f.t.Helper()
	require.NoError(f.t, f.b.Redis.ZAdd(f.ctx, key, redis.Z{Score: score, Member: member}).Err())
}

func (f *fixture) score(key, member string) (float64, bool) {
	f.t.Helper()
	s, err := f.b.Redis.ZScore(f.ctx, key, member).Result()
	if err == redis.Nil {
		return 0, false
	}
	require.NoError(f.t, err)
	return s, true
}

func (f *fixture) card(key string) int64 {
	f.t.Helper()
	n, err := f.b.Redis.ZCard(f.ctx, key).Result()
	require.NoError(f.t, err)
	return n
}

// cycle runs the script with defaults (time order, 30 s timeout, no waits).
func (f *fixture) cycle(req CycleRequest) CycleResult {
	f.t.Helper()
	if req.Timeout == 0 {
		req.Timeout = 30 * time.Second
	}
	if req.Waits == "" {
		req.Waits = noWaits
	}
	res, err := f.br.Cycle(f.ctx, f.keys, &req)
	require.NoError(f.t, err)
	return res
}

// noWaits retries at once.
var noWaits = NewRetryWaits(func(int) time.Duration { return 0 })

// firstWaits waits d before retry 1 and nothing before the others.
func firstWaits(d time.Duration) RetryWaits {
	return NewRetryWaits(func(retry int) time.Duration {
		if retry == 1 {
			return d
		}
		return 0
	})
}

func members(ds []Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d.Member)
	}
	return out
}

// settle returns the outcomes settling every delivery of res with a.
func settle(res CycleResult, a Action) []Outcome {
	var out []Outcome
	for i := range res.Deliveries {
		out = append(out, res.Deliveries[i].Settle(a))
	}
	return out
}

func nowMs() float64 { return float64(time.Now().UnixMilli()) }

func TestCyclePopsDueTimeMessagesOldestFirst(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		now := nowMs()
		f.zadd(f.keys.Store, now-100, "b")
		f.zadd(f.keys.Store, now-200, "a")
		f.zadd(f.keys.Store, now+5_000, "later")
		f.zadd(f.keys.Store, 3, "retried") // retries left 3: due at once, sorts first
		res := f.cycle(CycleRequest{Max: 10})
		assert.Equal(t, []string{"retried", "a", "b"}, members(res.Deliveries))
		assert.Equal(t, 3, res.Deliveries[0].RetriesLeft)
		assert.Equal(t, MaxRetries, res.Deliveries[1].RetriesLeft)
		assert.Equal(t, int64(now-200), res.Deliveries[1].DueMs)
		assert.Zero(t, res.Deliveries[0].DueMs, "a retry's due time is gone")
		assert.InDelta(t, now+5_000, float64(res.NextMs), 1, "next is the future store head")
		// In prepare with pop second*1000 + retries left (16 for fresh ones),
		// exactly as the delivery computed it.
		for _, d := range res.Deliveries {
			s, ok := f.score(f.keys.Prepare, string(d.Member))
			require.True(t, ok)
			assert.Equal(t, float64(res.NowMs/1000*1000+int64(d.RetriesLeft)), s)
			assert.Equal(t, float64(d.prepare), s)
		}
		assert.Equal(t, int64(1), f.card(f.keys.Store))
	})
}

func TestCyclePopsPriorityHighestFirst(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 20, "low")
		f.zadd(f.keys.Store, 900, "high")
		f.zadd(f.keys.Store, 100, "mid")
		f.zadd(f.keys.Store, 5, "retried")
		res := f.cycle(CycleRequest{Priority: true, Max: 2})
		assert.Equal(t, []string{"high", "mid"}, members(res.Deliveries))
		assert.Equal(t, res.NowMs, res.NextMs, "a full batch asks to come back at once")
		res = f.cycle(CycleRequest{Priority: true, Max: 10})
		assert.Equal(t, []string{"low", "retried"}, members(res.Deliveries), "retried messages rank below every priority")
	})
}

func TestCycleCommitOnlyRemovesTheEntryItPopped(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 50, "m")
		first := f.cycle(CycleRequest{Priority: true, Max: 1})
		require.Len(t, first.Deliveries, 1)
		// The entry times out and is popped again: prepare now holds a later delivery.
		later := first.NowMs/1000*1000 - 40_000 + 15
		require.NoError(t, b.Redis.ZAdd(f.ctx, f.keys.Prepare, redis.Z{Score: float64(later), Member: "m"}).Err())
		// A late commit of the first delivery must not remove it.
		f.cycle(CycleRequest{Priority: true, Outcomes: settle(first, Commit)})
		s, ok := f.score(f.keys.Prepare, "m")
		require.True(t, ok, "late commit removed a later delivery")
		assert.Equal(t, float64(later), s)
		// The right commit does.
		redelivered := Delivery{Member: []byte("m"), prepare: later}
		f.cycle(CycleRequest{Priority: true, Outcomes: []Outcome{redelivered.Settle(Commit)}})
		_, ok = f.score(f.keys.Prepare, "m")
		assert.False(t, ok)
	})
}

func TestCycleRollbackSpendsARetry(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, nowMs()-5, "m")
		for left := int64(16); left >= 1; left-- {
			res := f.cycle(CycleRequest{Max: 1})
			require.Len(t, res.Deliveries, 1, "delivery with %d retries left", left)
			require.Equal(t, int(left), res.Deliveries[0].RetriesLeft)
			f.cycle(CycleRequest{Outcomes: settle(res, Rollback)})
			s, ok := f.score(f.keys.Store, "m")
			require.True(t, ok)
			assert.Equal(t, float64(left-1), s)
		}
		// The 17th delivery fails too: dead.
		res := f.cycle(CycleRequest{Max: 1})
		require.Len(t, res.Deliveries, 1)
		assert.Equal(t, 0, res.Deliveries[0].RetriesLeft)
		f.cycle(CycleRequest{Outcomes: settle(res, Rollback)})
		assert.Equal(t, int64(0), f.card(f.keys.Store))
		assert.Equal(t, int64(0), f.card(f.keys.Prepare))
		d, ok := f.score(f.keys.Dead, "m")
		require.True(t, ok)
		assert.InDelta(t, float64(res.NowMs), d, 5_000)
	})
}

func TestCycleRollbackWithWaitGoesToRetryThenStore(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 40, "m")
		f.zadd(f.keys.Store, 30, "other")
		res := f.cycle(CycleRequest{Priority: true, Max: 1})
		require.Equal(t, []string{"m"}, members(res.Deliveries))
		f.cycle(CycleRequest{Priority: true, Waits: firstWaits(400 * time.Millisecond), Outcomes: settle(res, Rollback)})
		s, ok := f.score(f.keys.Retry, "m")
		require.True(t, ok)
		assert.Equal(t, int64(15), int64(s)%32, "retries left ride in the low bits")
		assert.InDelta(t, float64(res.NowMs+400), float64(int64(s)/32), 1_000)
		// While m waits, the slot serves the other message, and says when m is due.
		res = f.cycle(CycleRequest{Priority: true, Max: 5})
		assert.Equal(t, []string{"other"}, members(res.Deliveries))
		f.cycle(CycleRequest{Priority: true, Outcomes: settle(res, Commit)})
		res = f.cycle(CycleRequest{Priority: true, Max: 5})
		assert.Empty(t, res.Deliveries)
		assert.InDelta(t, float64(int64(s)/32), float64(res.NextMs), 1)
		// Once the wait is over it is popped with 15 retries left.
		if b.Mini != nil {
			b.Mini.SetTime(time.UnixMilli(int64(s)/32 + 1))
		} else {
			time.Sleep(time.Duration(int64(s)/32-res.NowMs+5) * time.Millisecond)
		}
		res = f.cycle(CycleRequest{Priority: true, Max: 5})
		assert.Equal(t, []string{"m"}, members(res.Deliveries))
		assert.Equal(t, 15, res.Deliveries[0].RetriesLeft)
		assert.Zero(t, res.Deliveries[0].Priority, "a retry's priority is gone")
	})
}

func TestCycleRollbackMergesIntoNewerCopy(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		due := nowMs() - 10
		f.zadd(f.keys.Store, due, "m")
		res := f.cycle(CycleRequest{Max: 1})
		require.Len(t, res.Deliveries, 1)
		// A newer copy is sent for a later time while the first is in prepare.
		future := nowMs() + 3_600_000
		f.zadd(f.keys.Store, future, "m")
		f.cycle(CycleRequest{Waits: firstWaits(5 * time.Second), Outcomes: settle(res, Rollback)})
		s, ok := f.score(f.keys.Store, "m")
		require.True(t, ok)
		assert.Equal(t, future, s, "the newer copy keeps its time; the failure merged into it")
		assert.Equal(t, int64(0), f.card(f.keys.Retry))
		assert.Equal(t, int64(0), f.card(f.keys.Prepare))
	})
}

func TestCycleSameContentInPrepareIsHeldBack(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 100, "m")
		first := f.cycle(CycleRequest{Priority: true, Max: 5})
		require.Equal(t, []string{"m"}, members(first.Deliveries))
		// Sent again while the first copy is in prepare.
		f.zadd(f.keys.Store, 200, "m")
		f.zadd(f.keys.Store, 50, "x")
		res := f.cycle(CycleRequest{Priority: true, Max: 5})
		assert.Equal(t, []string{"x"}, members(res.Deliveries), "the new copy waits until the old one is settled")
		// Committing the old copy leaves the new one in store, with its own score.
		f.cycle(CycleRequest{Priority: true, Outcomes: append(settle(first, Commit), settle(res, Commit)...)})
		s, ok := f.score(f.keys.Store, "m")
		require.True(t, ok)
		assert.Equal(t, float64(200), s)
		res = f.cycle(CycleRequest{Priority: true, Max: 5})
		assert.Equal(t, []string{"m"}, members(res.Deliveries))
		assert.Equal(t, int64(200), res.Deliveries[0].Priority)
	})
}

func TestCycleSameContentRollbackOfOldCopyKeepsNewOne(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 100, "m")
		first := f.cycle(CycleRequest{Priority: true, Max: 5})
		f.zadd(f.keys.Store, 300, "m")
		f.cycle(CycleRequest{Priority: true, Outcomes: settle(first, Rollback)})
		s, ok := f.score(f.keys.Store, "m")
		require.True(t, ok)
		assert.Equal(t, float64(300), s, "rollback must not overwrite the newer copy")
	})
}

func TestCycleRestoreKeepsOriginalScore(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		due := nowMs() - 1000
		f.zadd(f.keys.Store, due, "a")
		f.zadd(f.keys.Store, 7, "b") // a retried message with 7 retries left
		res := f.cycle(CycleRequest{Max: 5})
		require.Len(t, res.Deliveries, 2)
		f.cycle(CycleRequest{Outcomes: settle(res, Restore)})
		s, _ := f.score(f.keys.Store, "a")
		assert.Equal(t, due, s)
		s, _ = f.score(f.keys.Store, "b")
		assert.Equal(t, float64(7), s, "no retry spent")
		assert.Equal(t, int64(0), f.card(f.keys.Prepare))
	})
}

func TestCycleRestoreMergeRules(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		first := nowMs() - 1000
		f.zadd(f.keys.Store, first, "m")
		res := f.cycle(CycleRequest{Max: 1})
		require.Len(t, res.Deliveries, 1)
		later := nowMs() + 5000
		f.zadd(f.keys.Store, later, "m") // a copy arrives while m is in hand
		restore := settle(res, Restore)
		// FixedTime (no KeepFirst): the newer copy's time wins.
		f.cycle(CycleRequest{Outcomes: restore})
		s, _ := f.score(f.keys.Store, "m")
		assert.Equal(t, later, s)
		// RangeMerge (KeepFirst): the first due time wins.
		require.NoError(t, b.Redis.ZRem(f.ctx, f.keys.Store, "m").Err())
		f.zadd(f.keys.Store, first, "m")
		res = f.cycle(CycleRequest{Max: 1, KeepFirst: true})
		f.zadd(f.keys.Store, later, "m")
		f.cycle(CycleRequest{KeepFirst: true, Outcomes: settle(res, Restore)})
		s, _ = f.score(f.keys.Store, "m")
		assert.Equal(t, first, s)
	})
}

func TestCycleReclaimsTimedOutPrepareEntries(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		f.zadd(f.keys.Store, 60, "m")
		res := f.cycle(CycleRequest{Priority: true, Max: 1, Timeout: time.Second})
		require.Len(t, res.Deliveries, 1)
		// Not before the timeout has surely passed.
		res2 := f.cycle(CycleRequest{Priority: true, Max: 1, Timeout: time.Second})
		assert.Empty(t, res2.Deliveries)
		expiry := (res.NowMs/1000 + 2) * 1000
		assert.Equal(t, expiry, res2.NextMs, "next is the prepare expiry")
		if b.Mini != nil {
			b.Mini.SetTime(time.UnixMilli(expiry))
		} else {
			time.Sleep(time.Duration(expiry-res2.NowMs+5) * time.Millisecond)
		}
		res3 := f.cycle(CycleRequest{Priority: true, Max: 1, Timeout: time.Second})
		require.Equal(t, []string{"m"}, members(res3.Deliveries), "reclaimed as failed and popped again")
		assert.Equal(t, 15, res3.Deliveries[0].RetriesLeft, "the timeout spent a retry")
	})
}

func TestCycleTimeoutHonoursBackoff(t *testing.T) {
	f := newFixture(t, testenv.Mini(t))
	f.zadd(f.keys.Store, 60, "m")
	start := time.Now()
	f.b.Mini.SetTime(start)
	res := f.cycle(CycleRequest{Priority: true, Max: 1, Timeout: 5 * time.Second})
	require.Len(t, res.Deliveries, 1)
	at := start.Add(7 * time.Second)
	f.b.Mini.SetTime(at)
	res = f.cycle(CycleRequest{Priority: true, Max: 1, Timeout: 5 * time.Second, Waits: firstWaits(9 * time.Second)})
	assert.Empty(t, res.Deliveries, "retry 1 waits 9 s")
	s, ok := f.score(f.keys.Retry, "m")
	require.True(t, ok)
	due := (at.UnixMicro()+999)/1000 + 9000 // the first whole millisecond 9 s after the timeout was noticed
	assert.Equal(t, due, int64(s)/32)
	assert.Equal(t, due, res.NextMs)
}

func TestCycleNextDueAndIdle(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		res := f.cycle(CycleRequest{Max: 10})
		assert.Empty(t, res.Deliveries)
		assert.Equal(t, int64(-1), res.NextMs, "an empty slot has nothing to wait for")
		due := nowMs() + 1234
		f.zadd(f.keys.Store, due, "m")
		res = f.cycle(CycleRequest{Max: 10})
		assert.Equal(t, int64(due), res.NextMs)
	})
}

func TestEnqueueGroupsPerKeyAndKeepsMergeRules(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		f := newFixture(t, b)
		errs, err := f.br.Enqueue(f.ctx, []Entry{
			{Key: f.keys.Store, Score: 100, Member: []byte("a"), NX: true},
			{Key: f.keys.Store, Score: 200, Member: []byte("a"), NX: true},
			{Key: f.keys.Retry, Score: 100, Member: []byte("b")},
			{Key: f.keys.Retry, Score: 300, Member: []byte("b")},
		}, []Publication{{Channel: "ch", Payload: []byte("3:0")}})
		require.NoError(t, err)
		require.Nil(t, errs)
		s, _ := f.score(f.keys.Store, "a")
		assert.Equal(t, float64(100), s, "NX keeps the first")
		s, _ = f.score(f.keys.Retry, "b")
		assert.Equal(t, float64(300), s, "plain ZADD keeps the last")
	})
}
