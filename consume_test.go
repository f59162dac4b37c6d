package rmq_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

var errBoom = errors.New("boom")

func TestPriorityMessagesArriveHighestFirst(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "price", 8, rmq.Priority)
		p := c.Producer()
		for _, pr := range []int64{50, 900, 17, 300} {
			require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "price", Content: fmt.Appendf(nil, "p%d", pr), Priority: pr, SlotBasis: "one-key"}))
		}
		// A duplicate replaces the priority of the waiting copy (last write wins).
		require.NoError(t, p.Send(ctx, rmq.PriorityMessage{Topic: "price", Content: []byte("p17"), Priority: 1000, SlotBasis: "one-key"}))
		r := newRecorder()
		require.NoError(t, c.Subscribe("price", r))
		run(t, c)
		calls := r.waitCalls(t, 4, 5*time.Second)
		assert.Equal(t, []string{"p17", "p900", "p300", "p50"}, r.contents())
		assert.Equal(t, int64(1000), calls[0].msg.Priority)
		assert.Equal(t, 16, calls[0].msg.RetriesLeft)
		assert.Equal(t, 1, calls[0].msg.Attempt)
		assert.Equal(t, rmq.SlotIndex([]byte("one-key"), 8), calls[0].msg.Slot)
	})
}

func TestFixedTimeIsNeverEarlyAndWakesWithoutPolling(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		// A long idle poll: only the producers' wake-ups and the consumer's own
		// timers can deliver these in time.
		c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
		define(t, c, "close", 16, rmq.FixedTime)
		r := newRecorder()
		require.NoError(t, c.Subscribe("close", r, rmq.WithThreads(4)))
		run(t, c)
		time.Sleep(100 * time.Millisecond) // consumers idle
		due := map[string]time.Time{}
		var msgs []rmq.OutgoingMessage
		for i := range 40 {
			at := time.Now().Add(time.Duration(200+i*20) * time.Millisecond)
			name := fmt.Sprintf("order:%d", i)
			due[name] = at
			msgs = append(msgs, rmq.FixedTimeMessage{Topic: "close", Content: []byte(name), FixedTime: at})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs[:20]...))
		for _, m := range msgs[20:] {
			require.NoError(t, c.Producer().Send(ctx, m))
		}
		calls := r.waitCalls(t, 40, 10*time.Second)
		var worst time.Duration
		for _, d := range calls {
			late := d.at.Sub(due[d.content])
			assert.GreaterOrEqual(t, late, time.Duration(0), "%s delivered %v early", d.content, -late)
			worst = max(worst, late)
		}
		t.Logf("worst lateness %v", worst)
		// Far below the one-minute idle poll: the wake-up path worked.
		assert.Less(t, worst, 5*time.Second)
	})
}

func TestRangeMergeMergesCopiesAndKeepsFirstDueTime(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "render", 4, rmq.RangeMerge)
		r := newRecorder()
		require.NoError(t, c.Subscribe("render", r))
		run(t, c)
		const window = 2 * time.Second // far longer than the five sends take, even on a loaded machine
		first := time.Now()
		for range 5 {
			require.NoError(t, c.Producer().Send(ctx, rmq.RangeMergeMessage{Topic: "render", Content: []byte("sku:42"), TimeRange: window}))
			time.Sleep(40 * time.Millisecond)
		}
		require.Less(t, time.Since(first), window, "the sends took longer than the window")
		require.NoError(t, c.Producer().Send(ctx, rmq.RangeMergeMessage{Topic: "render", Content: []byte("sku:7"), TimeRange: window}))
		calls := r.waitCalls(t, 2, 4*window)
		time.Sleep(300 * time.Millisecond)
		assert.ElementsMatch(t, []string{"sku:42", "sku:7"}, r.contents(), "five sends of sku:42 merged into one")
		for _, d := range calls {
			if d.content == "sku:42" {
				assert.False(t, d.at.Before(first.Add(window)), "delivered before the window closed")
				assert.WithinDuration(t, first.Add(window), d.msg.Due, 50*time.Millisecond, "due time is the first send's")
			}
		}
	})
}

func TestFailingMessageIsDeliveredSeventeenTimesThenDead(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.NoBackoff))
		define(t, c, "jobs", 4, rmq.Priority)
		r := newRecorder()
		r.fail = func(m *rmq.Message) error {
			if string(m.Content) == "bad" {
				return errBoom
			}
			return nil
		}
		require.NoError(t, c.Subscribe("jobs", r))
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "jobs", Content: []byte("bad"), Priority: 99}))
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "jobs", Content: []byte("good"), Priority: 99}))
		run(t, c)
		eventually(t, 10*time.Second, "bad is dead", func() bool { return stats(t, c, "jobs").Dead == 1 })
		var attempts, left []int
		for _, d := range r.snapshot() {
			if d.content == "bad" {
				attempts = append(attempts, d.msg.Attempt)
				left = append(left, d.msg.RetriesLeft)
			}
		}
		require.Len(t, attempts, rmq.MaxRetries+1)
		for i := range attempts {
			assert.Equal(t, i+1, attempts[i])
			assert.Equal(t, rmq.MaxRetries-i, left[i])
		}
		st := stats(t, c, "jobs")
		assert.Equal(t, int64(0), st.Store)
		assert.Equal(t, int64(0), st.Prepare)
		dead, err := c.DeadMessages(ctx, "jobs", 0)
		require.NoError(t, err)
		require.Len(t, dead, 1)
		assert.Equal(t, "bad", string(dead[0].Content))
		assert.WithinDuration(t, time.Now(), dead[0].Died, 10*time.Second)
		assert.Contains(t, r.contents(), "good")
		m := c.Metrics()
		assert.Equal(t, int64(2), m.Sent)
		assert.Equal(t, int64(rmq.MaxRetries+2), m.Delivered)
		assert.Equal(t, int64(rmq.MaxRetries), m.Redelivered)
		assert.Equal(t, int64(rmq.MaxRetries+1), m.Failed)
		assert.Equal(t, int64(1), m.Committed)
	})
}

func TestNotOwnerHandsTheMessageBackUnchanged(t *testing.T) {
	t.Parallel() // reads nothing process-wide
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "p", 2, rmq.Priority)
		r := newRecorder()
		var n atomic.Int32
		r.fail = func(*rmq.Message) error {
			if n.Add(1) == 1 {
				return rmq.ErrNotOwner
			}
			return nil
		}
		require.NoError(t, c.Subscribe("p", r))
		run(t, c)
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("x"), Priority: 77}))
		calls := r.waitCalls(t, 2, 5*time.Second)
		assert.Equal(t, 1, calls[1].msg.Attempt, "no retry spent")
		assert.Equal(t, int64(77), calls[1].msg.Priority, "original score kept")
		assert.Equal(t, int64(1), c.Metrics().NotOwner)
	})
}

func TestRetryBackoffIsHonouredWhileTheSlotServesOthers(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.SteppedBackoff(700*time.Millisecond, 200*time.Millisecond)))
		define(t, c, "one", 1, rmq.FixedTime)
		r := newRecorder()
		var failures atomic.Int32
		r.fail = func(m *rmq.Message) error {
			if string(m.Content) == "flaky" && failures.Add(1) <= 2 {
				return errBoom
			}
			return nil
		}
		require.NoError(t, c.Subscribe("one", r))
		run(t, c)
		require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "one", Content: []byte("flaky"), FixedTime: time.Now().Add(50 * time.Millisecond)}))
		r.waitCalls(t, 1, 5*time.Second)
		// While flaky waits out its first backoff, the only slot serves others.
		require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "one", Content: []byte("other"), FixedTime: time.Now().Add(50 * time.Millisecond)}))
		calls := r.waitCalls(t, 4, 5*time.Second)
		require.Equal(t, []string{"flaky", "other", "flaky", "flaky"}, r.contents()[:4])
		gap1 := calls[2].at.Sub(calls[0].at)
		gap2 := calls[3].at.Sub(calls[2].at)
		assert.GreaterOrEqual(t, gap1, 700*time.Millisecond, "retry 1 waits 700ms")
		assert.GreaterOrEqual(t, gap2, 200*time.Millisecond, "retry 2 waits 200ms")
		assert.Equal(t, 3, calls[3].msg.Attempt, "third delivery")
		assert.Equal(t, 14, calls[3].msg.RetriesLeft)
	})
}

func TestListenerPanicRollsBack(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithRetryBackoff(rmq.NoBackoff))
		define(t, c, "p", 2, rmq.Priority)
		r := newRecorder()
		var n atomic.Int32
		r.fail = func(*rmq.Message) error {
			if n.Add(1) == 1 {
				panic("listener bug")
			}
			return nil
		}
		require.NoError(t, c.Subscribe("p", r))
		run(t, c)
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("x"), Priority: 20}))
		calls := r.waitCalls(t, 2, 5*time.Second)
		assert.Equal(t, 2, calls[1].msg.Attempt)
		eventually(t, 5*time.Second, "settled", func() bool { st := stats(t, c, "p"); return st.Prepare == 0 && st.Store == 0 })
		eventually(t, 5*time.Second, "both calls counted", func() bool { return c.Metrics().Delivered == 2 })
		m := c.Metrics()
		assert.Equal(t, int64(1), m.Panics)
		assert.Equal(t, int64(1), m.Failed, "the panic counts as a failure")
		assert.Equal(t, int64(1), m.Committed)
	})
}

func TestSameContentSentWhileInFlightIsProcessedAgain(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "p", 4, rmq.Priority)
		release := make(chan struct{})
		r := newRecorder()
		var first atomic.Bool
		r.fail = func(*rmq.Message) error {
			if first.CompareAndSwap(false, true) {
				<-release
			}
			return nil
		}
		require.NoError(t, c.Subscribe("p", r, rmq.WithThreads(4)))
		run(t, c)
		send := func() {
			require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("same"), Priority: 20}))
		}
		send()
		r.waitCalls(t, 1, 5*time.Second)
		send() // the first copy is in the listener
		time.Sleep(200 * time.Millisecond)
		assert.Len(t, r.snapshot(), 1, "the new copy waits for the old one")
		assert.Equal(t, int64(1), stats(t, c, "p").Store)
		close(release)
		r.waitCalls(t, 2, 5*time.Second)
		eventually(t, 5*time.Second, "both settled", func() bool { st := stats(t, c, "p"); return st.Prepare == 0 && st.Store == 0 })
		assert.Len(t, r.snapshot(), 2)
	})
}

func TestEachSlotIsConsumedByOneGoroutineAtATime(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithBatchSize(8))
		const slots = 8
		define(t, c, "serial", slots, rmq.Priority)
		var active [slots]atomic.Int32
		var overlaps, total atomic.Int32
		var concurrent, peak atomic.Int32
		l := rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
			if active[m.Slot].Add(1) != 1 {
				overlaps.Add(1)
			}
			n := concurrent.Add(1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			concurrent.Add(-1)
			active[m.Slot].Add(-1)
			total.Add(1)
			return nil
		})
		require.NoError(t, c.Subscribe("serial", l, rmq.WithThreads(3)))
		var msgs []rmq.OutgoingMessage
		for i := range 300 {
			msgs = append(msgs, rmq.PriorityMessage{Topic: "serial", Content: fmt.Appendf(nil, "m%d", i), Priority: 20 + int64(i%5)})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
		run(t, c)
		eventually(t, 20*time.Second, "all consumed", func() bool { return total.Load() == 300 })
		assert.Zero(t, overlaps.Load(), "two listener calls of one slot overlapped")
		assert.LessOrEqual(t, peak.Load(), int32(3), "more concurrent listeners than threads")
		assert.Greater(t, peak.Load(), int32(1), "threads ran in parallel")
	})
}

func TestCloseFinishesInFlightAndRestoresUnstarted(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithBatchSize(50))
		define(t, c, "fixed", 1, rmq.FixedTime)
		inListener := make(chan struct{})
		var calls []string
		var mu sync.Mutex
		l := rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
			mu.Lock()
			calls = append(calls, string(m.Content))
			n := len(calls)
			mu.Unlock()
			if n == 1 {
				// Teach the consumer that listeners are quick, so it pops big batches.
				return nil
			}
			if n == 2 {
				close(inListener)
				time.Sleep(300 * time.Millisecond)
			}
			return nil
		})
		require.NoError(t, c.Subscribe("fixed", l))
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		// Due 50 ms ahead, not 1 ms: Send refuses a time already past, and a
		// loaded machine can take more than a millisecond to get there.
		require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("warm-up"), FixedTime: time.Now().Add(50 * time.Millisecond)}))
		eventually(t, 5*time.Second, "warm-up consumed", func() bool { mu.Lock(); defer mu.Unlock(); return len(calls) == 1 })
		due := time.Now().Add(50 * time.Millisecond)
		var msgs []rmq.OutgoingMessage
		for i := range 20 {
			msgs = append(msgs, rmq.FixedTimeMessage{Topic: "fixed", Content: fmt.Appendf(nil, "m%02d", i), FixedTime: due.Add(time.Duration(i) * time.Millisecond)})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
		<-inListener
		closeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		require.NoError(t, c.Close(closeCtx))
		require.NoError(t, <-done)
		mu.Lock()
		handled := len(calls) - 1
		mu.Unlock()
		st := stats(t, c, "fixed")
		assert.Equal(t, int64(0), st.Prepare, "everything settled")
		assert.Equal(t, int64(20-handled), st.Store, "unstarted messages are back in store")
		assert.Less(t, handled, 20, "Close interrupted the batch")
		// They are back as they were: their own due times, no retry spent.
		for i := handled; i < 20; i++ {
			s, err := b.Redis.ZScore(ctx, c.Namespace()+":{fixed:0}:store", fmt.Sprintf("m%02d", i)).Result()
			require.NoError(t, err)
			at := due.Add(time.Duration(i) * time.Millisecond)
			assert.Equal(t, float64((at.UnixNano()+999_999)/1e6), s, "m%02d", i)
		}
	})
}
