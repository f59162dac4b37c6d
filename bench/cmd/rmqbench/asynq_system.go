package main

import (
	"context"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// asynqTaskType is the type of every asynq task of the benchmark.
const asynqTaskType = "bench"

// asynqQueue is asynq's default queue, the only one used.
const asynqQueue = "default"

// asynqEnqueueAll enqueues one task per payload from workers goroutines, one
// Enqueue call per task (asynq has no batch API). opts gives each task's
// options.
func asynqEnqueueAll(ctx context.Context, c *asynq.Client, pl [][]byte, workers int, opts func(i int) []asynq.Option) error {
	return parallel(len(pl), workers, func(i int) error {
		var o []asynq.Option
		if opts != nil {
			o = opts(i)
		}
		if _, err := c.EnqueueContext(ctx, asynq.NewTask(asynqTaskType, pl[i]), o...); err != nil {
			return fmt.Errorf("asynq enqueue %d: %w", i, err)
		}
		return nil
	})
}

// newAsynqServer returns a server on r that logs only errors.
func newAsynqServer(r *redis.Client, cfg asynq.Config) *asynq.Server {
	cfg.LogLevel = asynq.ErrorLevel
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 5 * time.Second
	}
	return asynq.NewServerFromRedisClient(r, cfg)
}

// asynqWaitDrained polls until the queue has no pending, active, scheduled
// or retry task: every task handled and marked done.
func asynqWaitDrained(ctx context.Context, r *redis.Client) error {
	insp := asynq.NewInspectorFromRedisClient(r)
	for {
		qi, err := insp.GetQueueInfo(asynqQueue)
		if err != nil {
			return err
		}
		if qi.Pending == 0 && qi.Active == 0 && qi.Scheduled == 0 && qi.Retry == 0 {
			if qi.Archived > 0 {
				return fmt.Errorf("asynq: %d archived tasks", qi.Archived)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("asynq queue not drained (pending %d, active %d): %w", qi.Pending, qi.Active, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
