package rmq_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// DeleteTopic of a topic that a process
// starts consuming meanwhile either refuses (ErrTopicInUse) or leaves no
// process consuming the deleted topic.
func TestDeleteTopicRacingStart(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	testenv.ForEachReal(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		admin := newClientIn(t, b, ns)
		define(t, admin, "t", 4096, rmq.Priority)
		w := newClientIn(t, b, ns)
		got := make(chan struct{}, 1)
		require.NoError(t, w.Subscribe("t", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
			select {
			case got <- struct{}{}:
			default:
			}
			return nil
		})))
		delErr := make(chan error, 1)
		go func() { delErr <- admin.DeleteTopic(ctx, "t") }()
		time.Sleep(20 * time.Millisecond)
		startErr := make(chan error, 1)
		go func() { startErr <- w.Start(ctx) }()
		err := <-delErr
		t.Logf("DeleteTopic: %v", err)
		if errors.Is(err, rmq.ErrTopicInUse) {
			return
		}
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		select {
		case err := <-startErr:
			t.Logf("Start returned %v", err)
			return
		default:
		}
		// The topic is defined again as it was and sent to: the running
		// consumer of it should deliver.
		define(t, admin, "t", 4096, rmq.Priority)
		require.NoError(t, admin.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("m"), Priority: 20}))
		delivered := false
		select {
		case <-got:
			delivered = true
		case <-time.After(5 * time.Second):
		}
		ws, err := admin.Workers(ctx)
		require.NoError(t, err)
		topics, err := admin.Topics(ctx)
		require.NoError(t, err)
		t.Logf("workers %+v, topics %v, message to the topic defined again delivered: %v", ws, topics, delivered)
		_ = w.Close(ctx)
		<-startErr
		t.Fatalf("DeleteTopic returned nil while a process started consuming the topic")
	})
}
