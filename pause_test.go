package rmq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// pauseWorld is two consuming clients (the default Redis coordinator) and an
// admin client on one namespace, sharing topic "t"'s 8 slots.
type pauseWorld struct {
	admin   *rmq.Client
	workers [2]*rmq.Client

	mu      sync.Mutex
	calls   [2]map[string]int // per worker: content → listener calls
	release chan struct{}     // the "slow" message's listener waits for it
	started chan struct{}     // the "slow" message's listener began
}

func newPauseWorld(t *testing.T, b testenv.Backend) *pauseWorld {
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	w := &pauseWorld{release: make(chan struct{}), started: make(chan struct{}, 1)}
	for i := range w.workers {
		c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
		require.NoError(t, err)
		define(t, c, "t", 8, rmq.Priority)
		w.calls[i] = make(map[string]int)
		require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
			w.mu.Lock()
			w.calls[i][string(m.Content)]++
			w.mu.Unlock()
			if string(m.Content) == "slow" {
				w.started <- struct{}{}
				<-w.release
			}
			return nil
		}), rmq.WithThreads(2)))
		run(t, c)
		w.workers[i] = c
	}
	admin, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = admin.Close(context.Background()) })
	w.admin = admin
	eventually(t, 10*time.Second, "both workers hold half the slots", func() bool {
		ws, err := admin.Workers(ctx)
		return err == nil && len(ws) == 2 && ws[0].OwnedSlots["t"] == 4 && ws[1].OwnedSlots["t"] == 4
	})
	return w
}

// sendEverySlot sends n messages to each of the 8 slots, named prefix-slot-i.
func (w *pauseWorld) sendEverySlot(t *testing.T, prefix string, n int) {
	var msgs []rmq.OutgoingMessage
	for slot := range 8 {
		for i := range n {
			msgs = append(msgs, rmq.PriorityMessage{Topic: "t", Content: fmt.Appendf(nil, "%s-%d-%d", prefix, slot, i),
				Priority: 20, SlotBasis: contentOfSlot(slot, 8)})
		}
	}
	require.NoError(t, w.admin.Producer().SendBatch(context.Background(), msgs...))
}

// delivered returns each worker's listener calls so far, and those of content.
func (w *pauseWorld) delivered(content string) (perWorker [2]int, ofContent int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, m := range w.calls {
		for c, n := range m {
			perWorker[i] += n
			if c == content {
				ofContent += n
			}
		}
	}
	return perWorker, ofContent
}

// PauseTopic holds both processes of the namespace within a second; a
// listener already running finishes and commits, and is not delivered again.
func TestPauseHoldsTwoProcessesAndLetsTheListenerInHandCommit(t *testing.T) {
	testenv.ForEachAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		w := newPauseWorld(t, b)
		w.sendEverySlot(t, "before", 2)
		eventually(t, 10*time.Second, "both workers consume", func() bool {
			per, _ := w.delivered("")
			return per[0] == 8 && per[1] == 8
		})

		require.NoError(t, w.admin.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("slow"), Priority: 20}))
		select {
		case <-w.started:
		case <-time.After(10 * time.Second):
			t.Fatal("the slow message was not delivered")
		}
		require.NoError(t, w.admin.PauseTopic(ctx, "t"))
		paused := time.Now()
		held := [2]int64{topicMetrics(w.workers[0], "t").HeldBack["pause"], topicMetrics(w.workers[1], "t").HeldBack["pause"]}
		time.Sleep(time.Until(paused.Add(time.Second))) // the bound within which every consumer applies it
		before, _ := w.delivered("")
		w.sendEverySlot(t, "paused", 2)
		close(w.release) // the listener in hand returns nil
		eventually(t, 5*time.Second, "the listener in hand commits while the topic is paused", func() bool {
			st := stats(t, w.admin, "t")
			return st.Prepare == 0 && st.Store == 16
		})
		time.Sleep(700 * time.Millisecond)
		after, _ := w.delivered("")
		assert.Equal(t, before, after, "no process delivers anything once the pause applies")
		for i, c := range w.workers {
			assert.Greater(t, topicMetrics(c, "t").HeldBack["pause"], held[i], "worker %d holds its slots back", i)
		}
		assert.Equal(t, int64(17), topicMetrics(w.workers[0], "t").Committed+topicMetrics(w.workers[1], "t").Committed,
			"the 16 before and the slow one committed")

		require.NoError(t, w.admin.ResumeTopic(ctx, "t"))
		eventually(t, 10*time.Second, "both workers consume what waited", func() bool {
			per, _ := w.delivered("")
			return per[0] >= 16 && per[1] >= 16 && per[0]+per[1] == 16+1+16 // the slow one went to one of them
		})
		time.Sleep(300 * time.Millisecond)
		per, slow := w.delivered("slow")
		assert.Equal(t, 1, slow, "the message in hand when the pause came was not delivered again")
		assert.Equal(t, 16+1+16, per[0]+per[1])
		st := stats(t, w.admin, "t")
		assert.Zero(t, st.Pending()+st.Prepare+st.Dead)
	})
}
