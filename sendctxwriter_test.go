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

// A Send whose ctx ends returns ctx.Err() then, even when it is the one
// that writes the stream's next commands and that write must wait: here
// behind the WAIT of an earlier Send for a replica that does not exist (2 s).
func TestSendThatWritesHeedsItsCtx(t *testing.T) {
	t.Parallel() // a server of its own
	srv := testenv.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rc.Close() })
	b := testenv.Backend{Name: "private", Redis: rc}
	c := newClient(t, b, rmq.WithReplicaAck(1, 2*time.Second))
	define(t, c, "acked", 4, rmq.Priority)
	p := c.Producer()
	first := make(chan error, 1)
	go func() {
		first <- p.Send(context.Background(), rmq.PriorityMessage{Topic: "acked", Content: []byte("first"), Priority: 20})
	}()
	time.Sleep(100 * time.Millisecond) // its WAIT is under way
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		start := time.Now()
		err := p.Send(ctx, rmq.PriorityMessage{Topic: "acked", Content: fmt.Appendf(nil, "m%d", i), Priority: 20})
		took := time.Since(start)
		cancel()
		t.Logf("Send with a 100 ms ctx: %v after %v", err, took.Round(time.Millisecond))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, took, 600*time.Millisecond, "the Send waited past its ctx")
	}
	require.ErrorIs(t, <-first, rmq.ErrNotReplicated)
}

// A Send whose ctx ends while the send stream dials returns with its ctx:
// here the stream's first dial meets a partition (the TCP connection is
// accepted, the handshake's CLIENT SETNAME gets no reply).
func TestSendHeedsItsCtxWhileTheStreamDials(t *testing.T) {
	b := testenv.Single(t)
	part := testenv.StartPartition(t, b.Redis.(*redis.Client).Options().Addr)
	rc := redis.NewClient(&redis.Options{Addr: part.Addr(), ClientName: "dialling"})
	defer rc.Close()
	c := newClientIn(t, testenv.Backend{Name: "via", Redis: rc}, testenv.Namespace(t, b))
	define(t, c, "p", 8, rmq.Priority)
	part.Cut()
	defer part.Heal()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("a"), Priority: 20})
	took := time.Since(start)
	t.Logf("Send with a ctx of 300ms returned after %v: %v", took.Round(time.Millisecond), err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, took, 1500*time.Millisecond, "Send outlived its ctx")
}
