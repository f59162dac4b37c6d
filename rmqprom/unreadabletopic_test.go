package rmqprom_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// hangTopic is a go-redis hook under which every command or pipeline that
// names a key of one topic ("…:{a:N}:…") waits until its context ends: a
// topic whose slots live on a Cluster master out of the process's reach.
type hangTopic struct{ tag string }

func (hangTopic) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h hangTopic) names(cmds ...redis.Cmder) bool {
	for _, c := range cmds {
		for _, a := range c.Args() {
			if s, ok := a.(string); ok && strings.Contains(s, h.tag) {
				return true
			}
		}
	}
	return false
}

func (h hangTopic) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.names(cmd) {
			<-ctx.Done()
			cmd.SetErr(ctx.Err())
			return ctx.Err()
		}
		return next(ctx, cmd)
	}
}

func (h hangTopic) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.names(cmds...) {
			<-ctx.Done()
			for _, c := range cmds {
				c.SetErr(ctx.Err())
			}
			return ctx.Err()
		}
		return next(ctx, cmds)
	}
}

// A topic whose backlog cannot be read within the timeout at all (its slots
// on a Cluster master out of reach) leaves no other topic out for good: a
// read that stopped at the first topic it tried starts the next one after
// it. (Every read started there, spent the whole timeout on it, and the
// topics after it were in no scrape.)
func TestUnreadableTopicLeavesTheOthersReported(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	r := realRedis(t)
	ctx := context.Background()
	ns := namespace(t, r)
	admin, err := rmq.New(r, rmq.WithNamespace(ns))
	require.NoError(t, err)
	defer admin.Close(context.Background())
	for _, name := range []string{"a", "b"} {
		require.NoError(t, admin.DefineTopic(ctx, rmq.Topic{Name: name, SlotAmount: 2, Type: rmq.Priority}))
	}
	for i := range 3 {
		require.NoError(t, admin.Producer().Send(ctx, rmq.PriorityMessage{Topic: "b", Content: fmt.Appendf(nil, "b%d", i), Priority: 20}))
	}

	hooked := redis.NewClient(&redis.Options{Addr: r.Options().Addr})
	defer hooked.Close()
	hooked.AddHook(hangTopic{tag: ":{a:"})
	c, err := rmq.New(hooked, rmq.WithNamespace(ns))
	require.NoError(t, err)
	defer c.Close(context.Background())
	reg := prometheus.NewRegistry()
	reg.MustRegister(rmqprom.NewCollector(c, rmqprom.WithTimeout(500*time.Millisecond)))

	seen := 0
	const scrapes = 5
	for range scrapes {
		got, ok := gather(t, reg)[`rmq_backlog_messages{state="store",topic="b"}`]
		if ok {
			seen++
			assert.Equal(t, 3.0, got)
		}
		time.Sleep(1100 * time.Millisecond) // the read ended at its deadline; past readMaxAge
	}
	t.Logf("topic b (readable at once) reported in %d of %d scrapes", seen, scrapes)
	assert.Positive(t, seen, "topic b's backlog is reported in some scrape")
}
