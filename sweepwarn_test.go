package rmq_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// failExistsHook fails every pipeline holding an EXISTS (the idle sweep's)
// while fail is set.
type failExistsHook struct{ fail *atomic.Bool }

func (h failExistsHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h failExistsHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h failExistsHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.fail.Load() {
			for _, c := range cmds {
				if c.Name() == "exists" {
					err := errors.New("injected sweep failure")
					for _, c := range cmds {
						c.SetErr(err)
					}
					return err
				}
			}
		}
		return next(ctx, cmds)
	}
}

// A failing idle sweep is logged at Warn the first time and every 30th
// in a row, not at every sweep (one a second by default, every 50 ms
// here: a line each).
func TestFailingIdleSweepIsLoggedOnce(t *testing.T) {
	b := testenv.Single(t)
	var fail atomic.Bool
	rc := redis.NewClient(b.Redis.(*redis.Client).Options())
	t.Cleanup(func() { rc.Close() })
	rc.AddHook(failExistsHook{fail: &fail})
	b.Redis = rc
	var warned testenv.Warnings
	c := newClient(t, b, rmq.WithIdleSweep(50*time.Millisecond), rmq.WithLogger(slog.New(&warned)))
	define(t, c, "t", 1, rmq.Priority)
	require.NoError(t, c.Subscribe("t", newRecorder()))
	run(t, c)
	awaitHeld(t, c, "t", 1, 200*time.Millisecond) // the slot looked, found nothing and parked
	fail.Store(true)
	time.Sleep(1200 * time.Millisecond) // about 24 sweeps
	fail.Store(false)
	n := 0
	for _, l := range warned.Logged() {
		if strings.Contains(l, "idle sweep failed") {
			n++
		}
	}
	assert.Equal(t, 1, n, "warnings of the failed sweeps: %v", warned.Logged())
	assert.Positive(t, c.Metrics().RedisErrors, "each failed sweep is counted")
}
