package rmq_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// processCPU is the process's CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The stream's reader must not spin while Redis stalls. Its idle read
// deadline (armed when the last reply came) fires while a reply is owed but
// not yet overdue; armDeadline then keeps the expired deadline when the new
// one would be at most ReadTimeout/4 later, so each Peek fails at once and
// the reader loops on the CPU until the reply is overdue.
func TestStreamReaderDoesNotSpinWhileRedisStalls(t *testing.T) {
	addr := testenv.StartRedis(t).Addr()
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer admin.Close()
	const readTimeout = 2 * time.Second
	rc := redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: readTimeout, MaxRetries: -1})
	defer rc.Close()
	c := newClient(t, testenv.Backend{Name: "own", Redis: rc})
	define(t, c, "p", 8, rmq.Priority)
	ctx := context.Background()
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("a"), Priority: 20}))
	ta := time.Now() // the reply came: the reader's idle deadline is about ta + readTimeout
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", "4000", "WRITE").Err())
	defer admin.Do(ctx, "CLIENT", "UNPAUSE")
	time.Sleep(time.Until(ta.Add(readTimeout/4 - 80*time.Millisecond)))
	sent := make(chan error, 1)
	go func() {
		sent <- c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("b"), Priority: 20})
	}()
	// The window: from before the idle deadline to after the reply is overdue.
	time.Sleep(time.Until(ta.Add(readTimeout - 300*time.Millisecond)))
	cpu0, wall0 := processCPU(), time.Now()
	time.Sleep(time.Until(ta.Add(readTimeout + readTimeout/4 + 200*time.Millisecond)))
	cpu, wall := processCPU()-cpu0, time.Since(wall0)
	t.Logf("CPU %v in %v of waiting for a stalled Redis; the Send: %v", cpu.Round(time.Millisecond), wall.Round(time.Millisecond), <-sent)
	assert.Less(t, cpu, wall/4, "the process spun while Redis stalled")
}
