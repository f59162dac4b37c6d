package rmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

func TestLookaheadHoldsMessagesAndDeliversThemAtTheirDueTime(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
		define(t, c, "ahead", 1, rmq.FixedTime)
		r := newRecorder()
		require.NoError(t, c.Subscribe("ahead", r, rmq.WithLookahead(3*time.Second)))
		run(t, c)
		time.Sleep(100 * time.Millisecond) // the consumer is idle
		const n = 30
		first := time.Now().Add(300 * time.Millisecond)
		due := map[string]time.Time{}
		var msgs []rmq.OutgoingMessage
		for i := range n {
			at := first.Add(time.Duration(i) * 40 * time.Millisecond)
			name := fmt.Sprintf("m%02d", i)
			due[name] = at
			msgs = append(msgs, rmq.FixedTimeMessage{Topic: "ahead", Content: []byte(name), FixedTime: at})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
		r.waitCalls(t, 1, 5*time.Second)
		// The pops from the first due time on took the messages due within
		// the lookahead too: they are in flight, waiting for their due times.
		eventually(t, 500*time.Millisecond, "most messages held ahead of their due time", func() bool {
			st := stats(t, c, "ahead")
			return st.Prepare > n/2 && st.Store < n/2
		})

		calls := r.waitCalls(t, n, 10*time.Second)
		var worst time.Duration
		seen := map[string]int{}
		for i, d := range calls {
			seen[d.content]++
			late := d.at.Sub(due[d.content])
			assert.GreaterOrEqual(t, late, time.Duration(0), "%s delivered %v early", d.content, -late)
			worst = max(worst, late)
			if i > 0 {
				assert.Greater(t, d.content, calls[i-1].content, "in due order")
			}
			assert.InDelta(t, due[d.content].UnixMilli(), d.msg.Due.UnixMilli(), 1, "%s: its own due time", d.content)
		}
		assert.Len(t, seen, n, "every message once")
		t.Logf("worst lateness %v", worst)
		assert.Less(t, worst, time.Second)
		// The commits went with later calls (at most the linger bound later).
		eventually(t, 5*time.Second, "every outcome settled", func() bool {
			st := stats(t, c, "ahead")
			return st.Prepare == 0 && st.Store == 0
		})
	})
}

func TestLookaheadCloseHandsHeldMessagesBack(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
		define(t, c, "ahead", 1, rmq.FixedTime)
		r := newRecorder()
		require.NoError(t, c.Subscribe("ahead", r, rmq.WithLookahead(5*time.Second)))
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		time.Sleep(100 * time.Millisecond)
		now := time.Now().Truncate(time.Millisecond)
		msgs := []rmq.OutgoingMessage{rmq.FixedTimeMessage{Topic: "ahead", Content: []byte("first"), FixedTime: now.Add(200 * time.Millisecond)}}
		for i := range 10 {
			msgs = append(msgs, rmq.FixedTimeMessage{Topic: "ahead", Content: fmt.Appendf(nil, "m%d", i),
				FixedTime: now.Add(3*time.Second + time.Duration(i)*time.Millisecond)})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
		r.waitCalls(t, 1, 5*time.Second)
		eventually(t, 2*time.Second, "the rest held", func() bool { return stats(t, c, "ahead").Prepare >= 10 })

		closeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		require.NoError(t, c.Close(closeCtx))
		require.NoError(t, <-done)
		assert.Equal(t, []string{"first"}, r.contents(), "nothing delivered early")
		st := stats(t, c, "ahead")
		assert.Equal(t, int64(0), st.Prepare, "nothing left in flight")
		assert.Equal(t, int64(10), st.Store, "the held messages are back")
		for i := range 10 {
			s, err := b.Redis.ZScore(ctx, c.Namespace()+":{ahead:0}:store", fmt.Sprintf("m%d", i)).Result()
			require.NoError(t, err)
			assert.Equal(t, float64(now.Add(3*time.Second+time.Duration(i)*time.Millisecond).UnixMilli()), s,
				"m%d keeps its due time", i)
		}
	})
}

func TestLookaheadRejectsBadInput(t *testing.T) {
	b := testenv.Mini(t)
	c := newClient(t, b)
	define(t, c, "p", 4, rmq.Priority)
	define(t, c, "f", 4, rmq.FixedTime)
	l := rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return nil })
	assert.ErrorIs(t, c.Subscribe("p", l, rmq.WithLookahead(time.Second)), rmq.ErrInvalidOption, "priority messages have no due time")
	for _, d := range []time.Duration{-time.Millisecond, rmq.MaxLookahead + time.Millisecond, 1500 * time.Microsecond} {
		assert.ErrorIs(t, c.Subscribe("f", l, rmq.WithLookahead(d)), rmq.ErrInvalidOption, "%v", d)
	}
	// Nothing was registered by the refused calls.
	require.NoError(t, c.Subscribe("p", l))
	require.NoError(t, c.Subscribe("f", l, rmq.WithLookahead(rmq.MaxLookahead)))
}

// A slot that moves to another client while its messages are held ahead:
// the old holder hands them back, the new one delivers them at their due
// time. None early, none lost, none twice.
func TestLookaheadSlotsMovingHandHeldMessagesOver(t *testing.T) {
	t.Parallel() // waits for due times, reads nothing process-wide
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		r := newRecorder()
		newWorker := func() *rmq.Client {
			c, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithIdlePoll(time.Minute))
			require.NoError(t, err)
			define(t, c, "ahead", 8, rmq.FixedTime)
			require.NoError(t, c.Subscribe("ahead", r, rmq.WithThreads(2), rmq.WithLookahead(5*time.Second)))
			run(t, c)
			return c
		}
		first := newWorker()
		eventually(t, 5*time.Second, "the first worker holds every slot", func() bool {
			ws, err := first.Workers(ctx)
			return err == nil && len(ws) == 1 && ws[0].OwnedSlots["ahead"] == 8
		})
		// A subscription's pops take one message each until a listener call
		// has shown how fast it is, and a slot that popped one ahead pops
		// again only when that one falls due or its commit goes (up to a
		// second later). One message delivered first lets the pops below
		// reach ahead with whole batches.
		due := map[string]time.Time{"warm": time.Now().Add(50 * time.Millisecond)}
		require.NoError(t, first.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "ahead", Content: []byte("warm"), FixedTime: due["warm"]}))
		r.waitCalls(t, 1, 5*time.Second)
		now := time.Now()
		var msgs []rmq.OutgoingMessage
		add := func(name string, at time.Time, basis string) {
			due[name] = at
			msgs = append(msgs, rmq.FixedTimeMessage{Topic: "ahead", Content: []byte(name), FixedTime: at, SlotBasis: basis})
		}
		for slot := range 8 {
			// One message per slot due soon, so that every slot pops ahead.
			add(fmt.Sprintf("kick-%d", slot), now.Add(200*time.Millisecond), basisOfSlot(slot, 8))
		}
		for i := range 80 {
			add(fmt.Sprintf("m%02d", i), now.Add(2*time.Second+time.Duration(i)*20*time.Millisecond), "")
		}
		require.NoError(t, first.Producer().SendBatch(ctx, msgs...))
		r.waitCalls(t, 1+8, 5*time.Second)
		eventually(t, time.Second, "the rest held ahead", func() bool { return stats(t, first, "ahead").Prepare >= 70 })

		second := newWorker()
		eventually(t, 10*time.Second, "the slots shared", func() bool {
			ws, err := second.Workers(ctx)
			return err == nil && len(ws) == 2 && ws[0].OwnedSlots["ahead"] == 4 && ws[1].OwnedSlots["ahead"] == 4
		})
		r.waitCalls(t, len(due), 15*time.Second)
		time.Sleep(200 * time.Millisecond) // a duplicate would show by now
		calls := r.snapshot()
		seen := map[string]int{}
		for _, d := range calls {
			seen[d.content]++
			late := d.at.Sub(due[d.content])
			assert.GreaterOrEqual(t, late, time.Duration(0), "%s delivered %v early", d.content, -late)
		}
		assert.Len(t, seen, len(due), "none lost")
		assert.Len(t, calls, len(due), "none twice")
		assert.Positive(t, first.Metrics().Restored, "the first worker handed held messages back")
	})
}

// basisOfSlot returns a slot basis that lands in slot of a topic of amount slots.
func basisOfSlot(slot, amount int) string {
	for i := 0; ; i++ {
		b := fmt.Sprintf("k%d", i)
		if rmq.SlotIndex([]byte(b), amount) == slot {
			return b
		}
	}
}

// Batches smaller than the window: each full pop reaches ahead, and the next
// comes when the last message in hand falls due. None early, none late by
// more than a pop, in due order.
func TestLookaheadWithSmallBatches(t *testing.T) {
	testenv.ForEachReal(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithIdlePoll(time.Minute), rmq.WithBatchSize(4))
		define(t, c, "ahead", 1, rmq.FixedTime)
		r := newRecorder()
		require.NoError(t, c.Subscribe("ahead", r, rmq.WithLookahead(2*time.Second)))
		run(t, c)
		time.Sleep(100 * time.Millisecond)
		first := time.Now().Add(200 * time.Millisecond)
		var msgs []rmq.OutgoingMessage
		due := map[string]time.Time{}
		for i := range 20 {
			at := first.Add(time.Duration(i) * 30 * time.Millisecond)
			name := fmt.Sprintf("m%02d", i)
			due[name] = at
			msgs = append(msgs, rmq.FixedTimeMessage{Topic: "ahead", Content: []byte(name), FixedTime: at})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
		calls := r.waitCalls(t, len(msgs), 10*time.Second)
		var worst time.Duration
		for i, d := range calls {
			late := d.at.Sub(due[d.content])
			assert.GreaterOrEqual(t, late, time.Duration(0), "%s delivered %v early", d.content, -late)
			worst = max(worst, late)
			assert.Equal(t, fmt.Sprintf("m%02d", i), d.content, "in due order")
		}
		t.Logf("worst lateness %v", worst)
		assert.Less(t, worst, 500*time.Millisecond)
	})
}
