package rmq_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// SendBatch calls racing Close while a pipeline of another SendBatch hangs
// (Redis cut off): each returns within its ctx (or with ErrClosed) and none
// waits for the pipelines of other SendBatch calls still running.
func TestSendBatchRacingCloseDoesNotWait(t *testing.T) {
	t.Parallel() // mostly waiting, on a partition of its own
	b := testenv.Single(t)
	part := testenv.StartPartition(t, b.Redis.(*redis.Client).Options().Addr)
	rc := redis.NewClient(&redis.Options{Addr: part.Addr(), ReadTimeout: time.Second, WriteTimeout: time.Second})
	defer rc.Close()
	c, err := rmq.New(rc, rmq.WithNamespace(testenv.Namespace(t, b)))
	require.NoError(t, err)
	define(t, c, "p", 64, rmq.Priority)
	part.Cut()
	var wg sync.WaitGroup
	// One SendBatch without a deadline: its pipeline waits for the client's
	// timeouts.
	wg.Go(func() {
		_ = c.Producer().SendBatch(context.Background(), rmq.PriorityMessage{Topic: "p", Content: []byte("long"), Priority: 20})
	})
	time.Sleep(200 * time.Millisecond)
	var worst atomic.Int64
	var worstErr atomic.Value
	// Batches of 16 contents of 512 KiB each (the copy SendBatch makes of
	// its contents takes a few ms), each with a ctx that has already ended:
	// they should return at once, with ctx.Err() or ErrClosed.
	var batch []rmq.OutgoingMessage
	for i := range 16 {
		content := append([]byte(fmt.Sprint("m", i, "-")), make([]byte, 512<<10)...)
		batch = append(batch, rmq.PriorityMessage{Topic: "p", Content: content, Priority: 20})
	}
	for range 4 {
		wg.Go(func() {
			for {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				start := time.Now()
				err := c.Producer().SendBatch(ctx, batch...)
				took := time.Since(start)
				if took > time.Duration(worst.Load()) {
					worst.Store(int64(took))
					worstErr.Store(fmt.Sprint(err))
				}
				if errors.Is(err, rmq.ErrClosed) {
					return
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		cctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_ = c.Close(cctx)
	}()
	wg.Wait()
	part.Heal()
	<-closed
	t.Logf("slowest SendBatch with an ended ctx: %v (%v)", time.Duration(worst.Load()).Round(time.Millisecond), worstErr.Load())
	assert.Less(t, time.Duration(worst.Load()), 1500*time.Millisecond, "a SendBatch outlived its ctx")
}
