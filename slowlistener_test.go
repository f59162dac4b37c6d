package rmq_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A slot's cycle says
// its next message falls due 200 ms after the pop (README, "When outcomes
// travel": the commits wait for the cycle that pops it, due within 250 ms).
// The listener of the message popped takes 200 ms, so by the time it returns
// the next message is due: it must be popped then, not 200 ms later, as
// happens when that due time is counted from the listener's return instead
// of from the pop's clock.
func TestNextMessageAfterASlowListenerIsNotLate(t *testing.T) {
	slowListenerThenDue(t, 200*time.Millisecond, 500*time.Millisecond)
}

// The same under WithLookahead(100ms), where no 250 ms bound applies: the pop at
// +300 ms reaches to +400 ms and says the next message falls due at +900 ms;
// the listener of the first takes 600 ms. The slot should pop again at once
// (the second is due by then), not 600 ms after its due time.
func TestNextMessageAfterASlowListenerIsNotLateWithLookahead(t *testing.T) {
	slowListenerThenDue(t, 600*time.Millisecond, 900*time.Millisecond, rmq.WithLookahead(100*time.Millisecond))
}

// slowListenerThenDue sends "first", due at +300 ms, whose listener takes
// slow, and "second", due at +second, to one slot of a fresh topic, and
// checks that second comes within 100 ms of the later of its due time and
// first's end.
func slowListenerThenDue(t *testing.T, slow, second time.Duration, opts ...rmq.SubscribeOption) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
		define(t, c, "slow", 1, rmq.FixedTime)
		r := newRecorder()
		r.fail = func(m *rmq.Message) error {
			if string(m.Content) == "first" {
				time.Sleep(slow)
			}
			return nil
		}
		require.NoError(t, c.Subscribe("slow", r, opts...))
		run(t, c)
		awaitHeld(t, c, "slow", 1, 100*time.Millisecond)
		// A first message teaches the consumer its listener's speed (the
		// first pop takes one message), so later pops take whole batches.
		require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "slow", Content: []byte("warm"),
			FixedTime: time.Now().Add(time.Millisecond)}))
		r.waitCalls(t, 1, 5*time.Second)
		time.Sleep(400 * time.Millisecond) // its commit settled, the slot parked

		now := time.Now()
		due := map[string]time.Time{"first": now.Add(300 * time.Millisecond), "second": now.Add(second)}
		require.NoError(t, c.Producer().SendBatch(ctx,
			rmq.FixedTimeMessage{Topic: "slow", Content: []byte("first"), FixedTime: due["first"]},
			rmq.FixedTimeMessage{Topic: "slow", Content: []byte("second"), FixedTime: due["second"]}))
		calls := r.waitCalls(t, 3, 5*time.Second)[1:]
		require.Equal(t, []string{"first", "second"}, []string{calls[0].content, calls[1].content})
		for _, d := range calls {
			t.Logf("%s due +%v delivered +%v", d.content, due[d.content].Sub(now).Round(time.Millisecond),
				d.at.Sub(now).Round(time.Millisecond))
		}
		ended := calls[0].at.Add(slow)
		late := calls[1].at.Sub(maxT(ended, due["second"]))
		assert.Less(t, late, 100*time.Millisecond, "second came %v after it was due and its slot free", late)
	})
}

func maxT(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
