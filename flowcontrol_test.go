package rmq_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

func TestPauseHoldsEveryConsumerAndResumeDeliversWhatIsOverdueInOrder(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		admin, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
		require.NoError(t, err)
		t.Cleanup(func() { _ = admin.Close(ctx) })
		define(t, admin, "fixed", 1, rmq.FixedTime)
		rec := newRecorder()
		worker, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
		require.NoError(t, err)
		require.NoError(t, worker.Subscribe("fixed", rec))
		run(t, worker)
		require.NoError(t, admin.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("before"), FixedTime: time.Now().Add(50 * time.Millisecond)}))
		rec.waitCalls(t, 1, 5*time.Second)

		require.NoError(t, admin.PauseTopic(ctx, "fixed"))
		st := stats(t, admin, "fixed")
		assert.True(t, st.Paused)
		time.Sleep(1100 * time.Millisecond)           // the bound within which every consumer applies it
		due := time.Now().Add(300 * time.Millisecond) // a margin for slow sends; all due before the resume below
		for i := range 5 {
			require.NoError(t, admin.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "fixed",
				Content: fmt.Appendf(nil, "m%d", i), FixedTime: due.Add(time.Duration(4-i) * 10 * time.Millisecond)}))
		}
		time.Sleep(500 * time.Millisecond)
		assert.Equal(t, []string{"before"}, rec.contents(), "a paused topic delivers nothing; sends go on")
		assert.Equal(t, int64(5), stats(t, admin, "fixed").Store)
		held := topicMetrics(worker, "fixed").HeldBack["pause"]
		assert.Positive(t, held, "held-back looks are counted")

		require.NoError(t, admin.ResumeTopic(ctx, "fixed"))
		calls := rec.waitCalls(t, 6, 2*time.Second)
		assert.False(t, stats(t, admin, "fixed").Paused)
		assert.Equal(t, []string{"before", "m4", "m3", "m2", "m1", "m0"}, rec.contents(), "overdue messages in due order")
		assert.Less(t, calls[5].at.Sub(calls[1].at), time.Second, "delivered at once")
	})
}

func TestAPauseOutlivesTheConsumers(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	admin, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(ctx) })
	define(t, admin, "p", 2, rmq.Priority)
	require.NoError(t, admin.PauseTopic(ctx, "p"))
	require.NoError(t, admin.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("x"), Priority: 20}))
	rec := newRecorder()
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe("p", rec))
	run(t, c)
	time.Sleep(500 * time.Millisecond)
	assert.Empty(t, rec.contents(), "a consumer started on a paused topic waits")
	require.NoError(t, admin.ResumeTopic(ctx, "p"))
	rec.waitCalls(t, 1, 3*time.Second)
}

func TestRateLimitBoundsDeliveriesAndChangesApply(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "p", 8, rmq.Priority)
		var msgs []rmq.OutgoingMessage
		for i := range 400 {
			msgs = append(msgs, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "m%d", i), Priority: 20})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
		require.NoError(t, c.SetRateLimit(ctx, "p", rmq.RateLimit{PerSecond: 50, Burst: 5}))
		assert.Equal(t, rmq.RateLimit{PerSecond: 50, Burst: 5}, stats(t, c, "p").RateLimit)
		var calls atomic.Int64
		require.NoError(t, c.Subscribe("p", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
			calls.Add(1)
			return nil
		}), rmq.WithThreads(4)))
		run(t, c)
		time.Sleep(500 * time.Millisecond) // start-up and the first burst
		from := calls.Load()
		time.Sleep(2 * time.Second)
		got := float64(calls.Load()-from) / 2
		t.Logf("delivered %.1f/s under a limit of 50/s", got)
		assert.InDelta(t, 50, got, 15, "the limit holds (loosely: this is a check, not the measurement)")
		assert.Positive(t, topicMetrics(c, "p").HeldBack["limit"])

		require.NoError(t, c.SetRateLimit(ctx, "p", rmq.RateLimit{}))
		eventually(t, 3*time.Second, "unlimited again: the rest is consumed at once", func() bool { return calls.Load() == 400 })
	})
}

func TestBadRateLimitsAreRefusedAndChangeNothing(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "p", 4, rmq.Priority)
	require.NoError(t, c.SetRateLimit(ctx, "p", rmq.RateLimit{PerSecond: 10, Burst: 2}))
	for _, l := range []rmq.RateLimit{{PerSecond: -1, Burst: 1}, {PerSecond: 5}, {Burst: 3}, {PerSecond: math.NaN(), Burst: 1},
		{PerSecond: math.Inf(1), Burst: 1}} {
		assert.ErrorIs(t, c.SetRateLimit(ctx, "p", l), rmq.ErrInvalidRateLimit, "%+v", l)
	}
	assert.Equal(t, rmq.RateLimit{PerSecond: 10, Burst: 2}, stats(t, c, "p").RateLimit, "nothing changed")
	assert.ErrorIs(t, c.SetRateLimit(ctx, "nope", rmq.RateLimit{PerSecond: 1, Burst: 1}), rmq.ErrUnknownTopic)
	assert.ErrorIs(t, c.PauseTopic(ctx, "nope"), rmq.ErrUnknownTopic)
	assert.ErrorIs(t, c.ResumeTopic(ctx, "bad{"), rmq.ErrInvalidTopic)
}

func TestBreakerHoldsAFailingTopicBackWithoutSpendingRetries(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.NoBackoff))
		define(t, c, "p", 4, rmq.Priority)
		var healthy atomic.Bool
		var calls atomic.Int64
		require.NoError(t, c.Subscribe("p", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
			calls.Add(1)
			if healthy.Load() {
				return nil
			}
			return errors.New("downstream is down")
		}), rmq.WithThreads(2), rmq.WithBreaker(rmq.Breaker{FailureRatio: 0.5, MinCalls: 10, OpenFor: 700 * time.Millisecond})))
		var msgs []rmq.OutgoingMessage
		for i := range 50 {
			msgs = append(msgs, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "m%d", i), Priority: 20})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
		run(t, c)
		eventually(t, 5*time.Second, "the breaker opens", func() bool { return topicMetrics(c, "p").Breaker == rmq.BreakerOpen })
		atOpen := calls.Load()
		time.Sleep(500 * time.Millisecond)
		assert.LessOrEqual(t, calls.Load()-atOpen, int64(2), "an open breaker delivers nothing (a call in hand may end)")
		assert.Less(t, atOpen, int64(30), "it opened after about MinCalls failures")
		// Half-open probes fail while the downstream is down, and open it again.
		time.Sleep(1500 * time.Millisecond)
		m := topicMetrics(c, "p")
		assert.GreaterOrEqual(t, m.BreakerOpened, int64(2), "a failed probe opened it again")
		assert.Positive(t, m.HeldBack["breaker"])
		st := stats(t, c, "p")
		assert.Zero(t, st.Dead, "held-back messages spent no retries: none is dead")
		assert.Less(t, calls.Load(), int64(60), "without the breaker every message would have failed 17 times by now")

		assert.Equal(t, m.BreakerOpened, m.BreakerTransitions[rmq.BreakerOpen])
		assert.Equal(t, m.BreakerOpened-1, m.BreakerTransitions[rmq.BreakerHalfOpen],
			"each reopening followed a move to half-open")
		assert.Zero(t, m.BreakerTransitions[rmq.BreakerClosed])

		healthy.Store(true)
		eventually(t, 10*time.Second, "the breaker closes and the rest is consumed", func() bool {
			st := stats(t, c, "p")
			return st.Pending()+st.Prepare == 0 && topicMetrics(c, "p").Breaker == rmq.BreakerClosed
		})
		m = topicMetrics(c, "p")
		assert.Equal(t, int64(1), m.BreakerTransitions[rmq.BreakerClosed])
		assert.Equal(t, m.BreakerOpened, m.BreakerTransitions[rmq.BreakerHalfOpen], "every opening ended in half-open")
		eventually(t, 5*time.Second, "the moves are shared with the namespace", func() bool {
			nm, _, err := c.NamespaceMetrics(ctx, "p", 5)
			return err == nil && nm.BreakerTransitions[rmq.BreakerClosed] == 1 &&
				nm.BreakerTransitions[rmq.BreakerHalfOpen] == m.BreakerOpened && nm.BreakerOpened == m.BreakerOpened
		})
	})
}

func TestBreakerZeroValueDisablesIt(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	c := newClient(t, b, rmq.WithRetryBackoff(rmq.NoBackoff))
	define(t, c, "p", 1, rmq.Priority)
	var calls atomic.Int64
	require.NoError(t, c.Subscribe("p", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
		calls.Add(1)
		return errors.New("no")
	}), rmq.WithBreaker(rmq.Breaker{})))
	for i := range 3 {
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "m%d", i), Priority: 20}))
	}
	run(t, c)
	eventually(t, 10*time.Second, "every message dead", func() bool { return stats(t, c, "p").Dead == 3 })
	assert.Equal(t, int64(3*(rmq.MaxRetries+1)), calls.Load())
	assert.Equal(t, rmq.BreakerOff, topicMetrics(c, "p").Breaker)
}

func TestWithBreakerRejectsBadValues(t *testing.T) {
	b := testenv.Mini(t)
	c := newClient(t, b)
	define(t, c, "p", 1, rmq.Priority)
	l := rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return nil })
	for _, br := range []rmq.Breaker{{FailureRatio: 1.5, MinCalls: 1, OpenFor: time.Second}, {FailureRatio: 0.5, OpenFor: time.Second},
		{FailureRatio: 0.5, MinCalls: 3}} {
		assert.ErrorIs(t, c.Subscribe("p", l, rmq.WithBreaker(br)), rmq.ErrInvalidOption, "%+v", br)
	}
}

func TestDeleteTopic(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "full", 4, rmq.Priority)
		define(t, c, "empty", 4, rmq.Priority)
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "full", Content: []byte("x"), Priority: 20}))
		require.NoError(t, c.PauseTopic(ctx, "full"))

		assert.ErrorIs(t, c.DeleteTopic(ctx, "full"), rmq.ErrTopicNotEmpty)
		assert.Equal(t, int64(1), stats(t, c, "full").Store, "a refused delete changes nothing")
		require.NoError(t, c.DeleteTopic(ctx, "empty"))
		require.NoError(t, c.DeleteTopic(ctx, "full", rmq.Force()))
		_, err := c.Stats(ctx, "full")
		assert.ErrorIs(t, err, rmq.ErrUnknownTopic)
		assert.Equal(t, 0, keyCount(t, b, c.Namespace()), "no key of the topics is left")
		topics, err := c.Topics(ctx)
		require.NoError(t, err)
		assert.Empty(t, topics)
		assert.ErrorIs(t, c.DeleteTopic(ctx, "full"), rmq.ErrUnknownTopic)

		// Defined again, it starts afresh (not paused).
		define(t, c, "full", 8, rmq.FixedTime)
		assert.False(t, stats(t, c, "full").Paused)
	})
}

func TestDeleteTopicRefusesATopicInUse(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	worker, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	define(t, worker, "t", 2, rmq.Priority)
	require.NoError(t, worker.Subscribe("t", newRecorder()))
	run(t, worker)
	admin := newClient(t, testenv.Backend{Name: b.Name, Redis: b.Redis, Mini: b.Mini}, rmq.WithNamespace(ns))
	eventually(t, 5*time.Second, "the worker runs", func() bool {
		ws, err := admin.Workers(ctx)
		return err == nil && len(ws) == 1
	})
	assert.ErrorIs(t, admin.DeleteTopic(ctx, "t"), rmq.ErrTopicInUse)
	assert.Equal(t, int64(0), stats(t, admin, "t").Store, "the topic is still there")
	require.NoError(t, worker.Close(ctx))
	assert.NoError(t, admin.DeleteTopic(ctx, "t"), "deleted once nobody consumes it")
}
