package reshard_test

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// ledger records what the producers had acknowledged and what the workers'
// listeners saw, and whether two listeners ever held one slot at once.
type ledger struct {
	mu        sync.Mutex
	acked     map[string]bool
	delivered map[string]int
	sendErrs  map[string]int
	active    [liveSlots]atomic.Int32
	overlaps  atomic.Int64
	last      [liveSlots]time.Time     // each slot's latest delivery
	gap       [liveSlots]time.Duration // each slot's longest time between two deliveries ending after since
	since     time.Time                // when the change began
	warned    testenv.Warnings         // what the clients logged at Warn and above
	workers   []*rmq.Client            // startLedger's two workers
}

func (l *ledger) listener() rmq.MessageListener {
	return rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
		if l.active[m.Slot].Add(1) > 1 {
			l.overlaps.Add(1)
		}
		time.Sleep(100 * time.Microsecond)
		l.active[m.Slot].Add(-1)
		now := time.Now()
		l.mu.Lock()
		l.delivered[string(m.Content)]++
		if !l.last[m.Slot].IsZero() && !l.since.IsZero() && now.After(l.since) {
			l.gap[m.Slot] = max(l.gap[m.Slot], now.Sub(l.last[m.Slot]))
		}
		l.last[m.Slot] = now
		l.mu.Unlock()
		return nil
	})
}

// startLedger defines a 64-slot Priority topic "t" in namespace ns on cl
// and starts two workers of two threads consuming it into a new ledger; it
// returns the ledger and a producer client (with producerOpts). Every
// client logs into the ledger's warnings.
func startLedger(t *testing.T, cl *testenv.PrivateCluster, ns string, producerOpts ...rmq.Option) (*ledger, *rmq.Client) {
	t.Helper()
	l := &ledger{acked: map[string]bool{}, delivered: map[string]int{}, sendErrs: map[string]int{}}
	logger := rmq.WithLogger(slog.New(&l.warned))
	producer := newClient(t, cl, ns, append([]rmq.Option{logger}, producerOpts...)...)
	require.NoError(t, producer.DefineTopic(context.Background(), rmq.Topic{Name: "t", SlotAmount: liveSlots, Type: rmq.Priority}))
	for range 2 {
		w := newClient(t, cl, ns, logger)
		require.NoError(t, w.Subscribe("t", l.listener(), rmq.WithThreads(2)))
		start(t, w)
		l.workers = append(l.workers, w)
	}
	return l, producer
}

// produce runs n producers sending to "t" through producer (Send and
// SendBatch by turns, a millisecond apart each), recording each call's
// outcome, until the returned stop is called; stop waits for them.
func (l *ledger) produce(producer *rmq.Client, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var seq atomic.Int64
	var producers sync.WaitGroup
	for range n {
		producers.Go(func() {
			for ctx.Err() == nil {
				i := seq.Add(1)
				content := "m" + strconv.FormatInt(i, 10)
				m := rmq.PriorityMessage{Topic: "t", Content: []byte(content), Priority: 20}
				var err error
				if i%2 == 0 {
					err = producer.Producer().Send(context.Background(), m)
				} else {
					err = producer.Producer().SendBatch(context.Background(), m)
				}
				l.mu.Lock()
				if err != nil {
					l.sendErrs[err.Error()]++
				} else {
					l.acked[content] = true
				}
				l.mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		})
	}
	return func() { cancel(); producers.Wait() }
}

// awaitDelivered waits until every acknowledged message was delivered, or
// fails after 30 s.
func (l *ledger) awaitDelivered(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for k := range l.acked {
			if l.delivered[k] == 0 {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "not every acknowledged message was delivered")
}
