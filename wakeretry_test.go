package rmq_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestFailedWakeUpIsPublishedAgain: on the real Cluster, a producer whose
// sharded wake-ups fail (its Redis user may not use the slots' sharded
// channels, a refusal that leaves its wake-ups sharded) still wakes the
// consumers: the topic's wake-up goes again on its broadcast channel, so a
// message sent with Send and one sent with SendBatch are delivered within
// a second or two, not at the idle sweep (here 20 minutes away), and so is
// a dead message that producer requeues with RequeueDead.
func TestFailedWakeUpIsPublishedAgain(t *testing.T) {
	b := testenv.Cluster(t)
	ctx := context.Background()
	c := newClient(t, b, rmq.WithIdlePoll(time.Minute), rmq.WithRetryBackoff(rmq.NoBackoff))
	define(t, c, "retried", 8, rmq.Priority)
	rec := newRecorder()
	var healthy atomic.Bool
	rec.fail = func(m *rmq.Message) error {
		if string(m.Content) == "doomed" && !healthy.Load() {
			return errBoom
		}
		return nil
	}
	require.NoError(t, c.Subscribe("retried", rec, rmq.WithThreads(2)))
	run(t, c)
	awaitHeld(t, c, "retried", 8, 300*time.Millisecond) // every slot has looked once and parked

	// The user may SPUBLISH but not on the slots' sharded channels (a refusal
	// of the channel, which leaves wake-ups sharded), and may PUBLISH on the
	// topics' broadcast channels.
	p, pc := producerAs(t, b, c.Namespace(), "resetchannels", "&"+c.Namespace()+":wake:*")
	require.Error(t, pc.SPublish(ctx, c.Namespace()+":{retried:0}:wake", "x").Err(), "the producer's user may not SPUBLISH there")
	require.NoError(t, pc.Publish(ctx, c.Namespace()+":wake:probe", "x").Err(), "the producer's user may PUBLISH there")
	expect := func(content string) {
		t.Helper()
		sent := time.Now()
		select {
		case <-rec.seen:
		case <-time.After(3 * time.Second):
			t.Fatalf("%s: not delivered within 3s; its failed wake-up was not published again", content)
		}
		t.Logf("%s delivered %v after its send", content, time.Since(sent))
		calls := rec.snapshot()
		assert.Equal(t, content, calls[len(calls)-1].content)
	}
	// The wake-up published again names the message's slot, not every slot.
	watch := b.Redis.Subscribe(ctx, c.Namespace()+":wake:retried")
	defer watch.Close()
	_, err := watch.Receive(ctx)
	require.NoError(t, err)
	require.NoError(t, p.Producer().Send(ctx, rmq.PriorityMessage{Topic: "retried", Content: []byte("sent"), Priority: 20}))
	expect("sent")
	select {
	case m := <-watch.Channel():
		assert.Regexp(t, `^[0-7]:[0-9]+$`, m.Payload, "the slot the failed wake-up named, with its due time")
	case <-time.After(time.Second):
		t.Fatal("no wake-up on the broadcast channel")
	}
	require.NoError(t, p.Producer().SendBatch(ctx, rmq.PriorityMessage{Topic: "retried", Content: []byte("batched"), Priority: 20}))
	expect("batched")

	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "retried", Content: []byte("doomed"), Priority: 20}))
	var n int64
	eventually(t, 10*time.Second, "doomed is dead", func() bool { return stats(t, c, "retried").Dead == 1 })
	healthy.Store(true)
	time.Sleep(300 * time.Millisecond) // its slot has parked
	for len(rec.seen) > 0 {
		<-rec.seen
	}
	n, err = p.RequeueDead(ctx, "retried")
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	expect("doomed")
}
