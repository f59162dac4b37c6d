package rmq_test

import (
	"context"
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

// A listener that returns ErrNotOwner while its worker owns the slot (its
// own fence, or a mistake) has its messages handed back with no retry spent,
// and the slot pops nothing for a while: not the same messages delivered
// again at once, endlessly (hundreds of thousands of calls a minute).
func TestErrNotOwnerWhileOwnedPausesTheSlot(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "given", 1, rmq.Priority)
		var giveBack atomic.Bool
		giveBack.Store(true)
		var calls, owned atomic.Int64
		var mu sync.Mutex
		attempts := map[string]int{}
		require.NoError(t, c.Subscribe("given", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
			calls.Add(1)
			if giveBack.Load() {
				if rmq.Owned(ctx) {
					owned.Add(1)
				}
				return rmq.ErrNotOwner
			}
			mu.Lock()
			attempts[string(m.Content)] = m.Attempt
			mu.Unlock()
			return nil
		})))
		var msgs []rmq.OutgoingMessage
		for i := range 5 {
			msgs = append(msgs, rmq.PriorityMessage{Topic: "given", Content: fmt.Appendf(nil, "m%d", i), Priority: 100})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))
		run(t, c)

		eventually(t, 5*time.Second, "a first call", func() bool { return calls.Load() > 0 })
		time.Sleep(2500 * time.Millisecond)
		n := calls.Load()
		assert.Equal(t, n, owned.Load(), "every call saw its slot owned")
		assert.LessOrEqual(t, n, int64(8), "calls in 2.5 s of a listener that hands everything back")

		giveBack.Store(false)
		eventually(t, 5*time.Second, "all five delivered", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(attempts) == 5
		})
		mu.Lock()
		for content, a := range attempts {
			assert.Equal(t, 1, a, "%s: no retry spent on being handed back", content)
		}
		mu.Unlock()
		eventually(t, 5*time.Second, "all committed", func() bool {
			st := stats(t, c, "given")
			return st.Store == 0 && st.Prepare == 0 && st.Dead == 0
		})
	})
}
