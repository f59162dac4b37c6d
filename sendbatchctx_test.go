package rmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A SendBatch whose Redis stops answering returns when its ctx ends, not
// when the Redis client's timeouts end its pipeline (5 s here); once Redis
// answers again a batch goes through, and Close waits for the pipeline left
// running, after which SendBatch fails with ErrClosed. On the single node
// and on a Cluster master.
func TestSendBatchReturnsWhenItsCtxEnds(t *testing.T) {
	t.Parallel()
	testenv.ForEachRealAtOnce(t, sendBatchAcrossACut)
}

func sendBatchAcrossACut(t *testing.T, b testenv.Backend) {
	ctx := context.Background()
	const slots = 8
	direct, ns := b.Redis, testenv.Namespace(t, b)
	var through redis.UniversalClient
	var p *testenv.Partition
	if single, ok := b.Redis.(*redis.Client); ok {
		p = testenv.StartPartition(t, single.Options().Addr)
		r := redis.NewClient(&redis.Options{Addr: p.Addr()})
		t.Cleanup(func() { r.Close() })
		through = r
	} else {
		m, err := b.Redis.(*redis.ClusterClient).MasterForKey(ctx, fmt.Sprintf("%s:{t:0}:store", ns))
		require.NoError(t, err)
		p = testenv.StartPartition(t, m.Options().Addr)
		through = testenv.ClusterVia(t, map[string]string{m.Options().Addr: p.Addr()}).Redis
	}
	c, err := rmq.New(through, rmq.WithNamespace(ns))
	require.NoError(t, err)
	define(t, c, "t", slots, rmq.Priority)
	send := func(ctx context.Context, content string) error {
		return c.Producer().SendBatch(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(content), Priority: 50})
	}
	stored := func(content string) bool {
		_, err := direct.ZScore(ctx, fmt.Sprintf("%s:{t:0}:store", ns), content).Result()
		return err == nil
	}
	before, during, after := contentIn("before", 0, slots), contentIn("during", 0, slots), contentIn("after", 0, slots)
	require.NoError(t, send(ctx, before))
	require.True(t, stored(before))

	p.Cut()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	start := time.Now()
	err = send(short, during)
	took := time.Since(start)
	cancel()
	t.Logf("SendBatch into the cut returned after %v: %v", took.Round(time.Millisecond), err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, took, 1500*time.Millisecond, "SendBatch outlived its ctx")

	p.Heal()
	long, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	require.NoError(t, send(long, after))
	assert.True(t, stored(after))
	t.Logf("the batch sent into the cut stored after the heal: %v", stored(during))
	require.NoError(t, c.Close(long))
	assert.ErrorIs(t, send(ctx, after), rmq.ErrClosed)
}
