package rmq_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// cycleCounter counts the script calls that touch one store key.
type cycleCounter struct {
	key string
	n   atomic.Int64
}

func (h *cycleCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *cycleCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}
func (h *cycleCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.count(c)
		}
		return next(ctx, cmds)
	}
}
func (h *cycleCounter) count(cmd redis.Cmder) {
	name := strings.ToLower(cmd.Name())
	if name != "evalsha" && name != "eval" {
		return
	}
	for _, a := range cmd.Args() {
		if s, ok := a.(string); ok && s == h.key {
			h.n.Add(1)
			return
		}
	}
}

// A FixedTime message far in the future (allowed: up to 2^50 ms) must leave
// its slot's consumer idle, looking at most once per idle poll, not spinning.
func TestFarFixedTimeDoesNotSpin(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	b := testenv.Mini(t)
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "far", 1, rmq.FixedTime)
	h := &cycleCounter{key: fmt.Sprintf("%s:{far:0}:store", c.Namespace())}
	b.Redis.AddHook(h)
	at := time.Date(2400, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "far", Content: []byte("x"), FixedTime: at}))
	rec := newRecorder()
	require.NoError(t, c.Subscribe("far", rec))
	run(t, c)
	time.Sleep(500 * time.Millisecond)
	before := h.n.Load()
	time.Sleep(time.Second)
	n := h.n.Load() - before
	require.LessOrEqual(t, n, int64(3), "cycle calls on a slot whose only message is due in 2400, within one second (idle poll 3s)")
	require.Empty(t, rec.snapshot())
}
