package rmq_test

import (
	"context"
	"errors"
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

// failStatsDel fails, once armed, the pipeline that deletes a topic's
// shared metrics (DeleteTopic's last Redis step but the definition's).
type failStatsDel struct{ armed atomic.Bool }

func (h *failStatsDel) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *failStatsDel) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *failStatsDel) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.armed.Load() {
			for _, c := range cmds {
				if a := c.Args(); len(a) == 2 && strings.EqualFold(a[0].(string), "del") && strings.HasSuffix(a[1].(string), ":stats:t") {
					err := errors.New("injected failure")
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

// A DeleteTopic whose deletion of the shared metrics fails leaves the topic
// defined, and what this client counted and had not shared yet still
// reaches the shared metrics: it counted the figures as shared before the
// deletion ran (NamespaceMetrics undercounted for good).
func TestFailedDeleteTopicKeepsUnsharedMetrics(t *testing.T) {
	t.Parallel() // mostly waiting
	b := testenv.Single(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	opts := *b.Redis.(*redis.Client).Options()
	rc := redis.NewClient(&opts)
	t.Cleanup(func() { rc.Close() })
	hook := &failStatsDel{}
	rc.AddHook(hook)
	c, err := rmq.New(rc, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	define(t, c, "t", 1, rmq.Priority)
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("a"), Priority: 20}))
	require.Eventually(t, func() bool { // the first send is flushed
		m, _, err := c.NamespaceMetrics(ctx, "t", 1)
		return err == nil && m.Sent == 1
	}, 10*time.Second, 50*time.Millisecond)
	for _, s := range []string{"b", "c", "d", "e", "f"} {
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(s), Priority: 20}))
	}
	hook.armed.Store(true)
	err = c.DeleteTopic(ctx, "t", rmq.Force())
	hook.armed.Store(false)
	require.Error(t, err, "the injected failure")
	t.Logf("DeleteTopic: %v", err)
	_, err = c.Stats(ctx, "t")
	require.NoError(t, err, "the topic is still defined")

	time.Sleep(5 * time.Second) // two flushes
	m, _, err := c.NamespaceMetrics(ctx, "t", 1)
	require.NoError(t, err)
	local := c.TopicMetrics()
	t.Logf("this client counts %d sent; the shared metrics say %d", local[0].Sent, m.Sent)
	assert.EqualValues(t, 6, m.Sent, "the figures counted before a failed DeleteTopic never reach the shared metrics")
}
