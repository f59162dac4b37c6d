package rmq_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// slowReply holds back the reply of one cycle call, once armed: the script
// has run in Redis, and its caller hears of it later (a slow node).
type slowReply struct {
	armed atomic.Bool
	hold  time.Duration
	ran   chan struct{} // closed once the held call has run in Redis
}

func (h *slowReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *slowReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.after([]redis.Cmder{cmd})
		return err
	}
}
func (h *slowReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.after(cmds)
		return err
	}
}

func (h *slowReply) after(cmds []redis.Cmder) {
	for _, c := range cmds {
		if args := c.Args(); c.Name() == "evalsha" && len(args) > 1 && args[1] == cycleSHA && h.armed.CompareAndSwap(true, false) {
			close(h.ran)
			time.Sleep(h.hold)
			return
		}
	}
}

// TestWakeUpDuringASlowPopIsKept: on a Cluster a thread stops waiting for a
// pop after 50 ms and serves its other slots. A wake-up that comes for the
// slot meanwhile, for a message stored after the pop looked, is kept: once
// the pop's empty result is back, the slot looks again at once instead of
// parking until the idle sweep (here 20 minutes away).
func TestWakeUpDuringASlowPopIsKept(t *testing.T) {
	b := testenv.Cluster(t)
	ctx := context.Background()
	h := &slowReply{hold: 400 * time.Millisecond, ran: make(chan struct{})}
	b.Redis.AddHook(h)
	c := newClient(t, b, rmq.WithIdlePoll(time.Minute))
	define(t, c, "slowpop", 1, rmq.Priority)
	rec := newRecorder()
	require.NoError(t, c.Subscribe("slowpop", rec))
	run(t, c)
	awaitHeld(t, c, "slowpop", 1, 300*time.Millisecond) // the slot has looked, found nothing and parked

	// A wake-up without a message: the slot pops, finds nothing, and its
	// reply is held back.
	h.armed.Store(true)
	wake := rdb.NewKeyspace(c.Namespace()).Slots("slowpop", 1)[0].Wake
	require.NoError(t, b.Redis.SPublish(ctx, wake, "0:0").Err())
	select {
	case <-h.ran:
	case <-time.After(5 * time.Second):
		t.Fatal("the wake-up did not make the slot pop")
	}
	time.Sleep(100 * time.Millisecond) // the thread has stopped waiting for the pop
	sent := time.Now()
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "slowpop", Content: []byte("meanwhile"), Priority: 20}))
	select {
	case <-rec.seen:
	case <-time.After(3 * time.Second):
		t.Fatal("the message whose wake-up came during the slow pop was not delivered: the slot parked")
	}
	took := time.Since(sent)
	t.Logf("delivered %v after its send (the pop's reply held %v)", took, h.hold)
	assert.Equal(t, "meanwhile", rec.snapshot()[0].content)
}
