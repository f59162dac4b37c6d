package rmqprom_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// slowRedis is a go-redis hook that delays every command and pipeline by d,
// or until the context ends.
type slowRedis struct{ d time.Duration }

func (slowRedis) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h slowRedis) wait(ctx context.Context) error {
	select {
	case <-time.After(h.d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h slowRedis) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.wait(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h slowRedis) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.wait(ctx); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// A slow Redis costs a scrape at most about the timeout; what was read in
// time is reported, the rest left out and logged, never reported as zeros.
func TestSlowRedisHonoursTimeout(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	c := slowNamespace(t, true)
	var logs syncBuffer
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c, rmqprom.WithTimeout(400*time.Millisecond),
		rmqprom.WithLogger(slogText(&logs))))
	start := time.Now()
	s := gather(t, reg)
	took := time.Since(start)
	assert.Less(t, took, 900*time.Millisecond)
	n := 0
	for i := range topics {
		if v, ok := s[fmt.Sprintf(`rmq_backlog_messages{state="store",topic="t%02d"}`, i)]; ok {
			n++
			assert.Equal(t, 1.0, v, "a gauge that is reported is real")
		}
	}
	assert.Less(t, n, topics, "some topics were left out")
	assert.Contains(t, logs.String(), "took longer than the timeout")
	t.Logf("scrape took %v, %d of %d topics", took, n, topics)
}

func slogText(w *syncBuffer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

// When Redis is too slow to read every topic within the timeout, the topics
// left out of one scrape are not the same ones every time: over a few scrapes
// each topic's backlog is reported, rather than the topics late in the
// alphabet never.
func TestSlowRedisLeavesNoTopicOutForever(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	c := slowNamespace(t, false)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c, rmqprom.WithTimeout(400*time.Millisecond)))
	seen := make(map[int]bool)
	for range 20 { // each read covers a few topics (fewer beside other tests): scrapes until every one was
		s := gather(t, reg)
		for i := range topics {
			if _, ok := s[fmt.Sprintf(`rmq_backlog_messages{state="store",topic="t%02d"}`, i)]; ok {
				seen[i] = true
			}
		}
		if len(seen) == topics {
			break
		}
		time.Sleep(1100 * time.Millisecond) // past the cache
	}
	var never []int
	for i := range topics {
		if !seen[i] {
			never = append(never, i)
		}
	}
	assert.Empty(t, never, "topics whose backlog no scrape reported")
}

// Every scrape that leaves topics out because their read ran out of time
// logs it, including the scrapes served from that cut-short read for the
// next second, and whichever of the read's end and the scrape's timer comes
// first.
func TestEveryScrapeMissingTopicsLogsIt(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	c := slowNamespace(t, false)
	for round := range 3 {
		var logs syncBuffer
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(rmqprom.NewCollector(c, rmqprom.WithTimeout(300*time.Millisecond), rmqprom.WithLogger(slogText(&logs))))
		for scrape := range 3 { // the first reads; the next two are served from that read
			before := len(logs.String())
			s := gather(t, reg)
			n := 0
			for i := range topics {
				if _, ok := s[fmt.Sprintf(`rmq_backlog_messages{state="store",topic="t%02d"}`, i)]; ok {
					n++
				}
			}
			require.Less(t, n, topics)
			assert.Contains(t, logs.String()[before:], "took longer than the timeout",
				"round %d scrape %d left out %d topics without a word", round, scrape, topics-n)
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// topics is how many topics slowNamespace defines: too many to read within
// the tests' timeouts at 30 ms a command.
const topics = 40

// slowNamespace returns a client of a fresh namespace of the real Redis with
// topics t00..t39 (each holding one message if withMessages), whose Redis
// client then answers every command 30 ms late.
func slowNamespace(t *testing.T, withMessages bool) *rmq.Client {
	t.Helper()
	r := realRedis(t)
	ctx := context.Background()
	c, err := rmq.New(r, rmq.WithNamespace(namespace(t, r)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	for i := range topics {
		name := fmt.Sprintf("t%02d", i)
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: name, SlotAmount: 2, Type: rmq.Priority}))
		if withMessages {
			require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: name, Content: []byte("x"), Priority: 20}))
		}
	}
	r.AddHook(slowRedis{d: 30 * time.Millisecond})
	return c
}
