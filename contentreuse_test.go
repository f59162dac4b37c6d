package rmq_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// heldPipeline is a go-redis hook that holds the first pipeline back until
// release is closed, and then runs it whatever its ctx: a pipeline under way
// when its caller's ctx ends, which reads its commands later.
type heldPipeline struct {
	entered chan struct{}
	release chan struct{}

	mu       sync.Mutex
	holdNext bool
}

func newHeldPipeline() *heldPipeline {
	return &heldPipeline{entered: make(chan struct{}), release: make(chan struct{}), holdNext: true}
}

func (h *heldPipeline) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *heldPipeline) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *heldPipeline) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		hold := h.holdNext
		h.holdNext = false
		h.mu.Unlock()
		if hold {
			close(h.entered)
			<-h.release
			ctx = context.WithoutCancel(ctx)
		}
		return next(ctx, cmds)
	}
}

// heldClient returns a client of b (miniredis) whose first pipeline waits
// for the hook's release, and the hook.
func heldClient(t *testing.T, b testenv.Backend, opts ...rmq.Option) (*rmq.Client, *heldPipeline) {
	t.Helper()
	r := redis.NewClient(&redis.Options{Addr: b.Mini.Addr()})
	t.Cleanup(func() { r.Close() })
	c, err := rmq.New(r, append([]rmq.Option{rmq.WithNamespace(testenv.Namespace(t, b))}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	define(t, c, "t", 1, rmq.Priority)
	h := newHeldPipeline()
	r.AddHook(h)
	return c, h
}

// storedMembers returns the members of slot 0 of topic t.
func storedMembers(t *testing.T, b testenv.Backend, c *rmq.Client) []string {
	t.Helper()
	ms, err := b.Redis.ZRange(context.Background(), c.Namespace()+":{t:0}:store", 0, -1).Result()
	require.NoError(t, err)
	return ms
}

// SendBatch whose ctx ends while its pipeline is under way returns
// ctx.Err(); its caller may then reuse the contents' memory at once, and
// the pipeline, which runs on, stores what was sent, not what the caller
// wrote there afterwards.
func TestSendBatchDoesNotReadContentsAfterReturn(t *testing.T) {
	b := testenv.Mini(t)
	c, h := heldClient(t, b)
	bufs := [][]byte{[]byte("first"), []byte("second"), []byte("third")}
	msgs := make([]rmq.OutgoingMessage, len(bufs))
	for i, buf := range bufs {
		msgs[i] = rmq.PriorityMessage{Topic: "t", Content: buf, Priority: 20}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-h.entered; cancel() }()
	err := c.Producer().SendBatch(ctx, msgs...)
	require.ErrorIs(t, err, context.Canceled)
	for _, buf := range bufs {
		copy(buf, bytes.Repeat([]byte("Z"), len(buf)))
	}
	close(h.release)
	require.NoError(t, c.Close(context.Background()), "Close waits for the pipeline")
	assert.ElementsMatch(t, []string{"first", "second", "third"}, storedMembers(t, b, c))
}

// The same for Send: a write that took the Send's request runs on after its
// ctx ended (here a pipeline, WithSendStream(false)).
func TestSendDoesNotReadContentAfterReturn(t *testing.T) {
	b := testenv.Mini(t)
	c, h := heldClient(t, b, rmq.WithSendStream(false))
	buf := []byte("sent")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-h.entered; cancel() }()
	err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: buf, Priority: 20})
	require.ErrorIs(t, err, context.Canceled)
	copy(buf, "ZZZZ")
	close(h.release)
	require.NoError(t, c.Close(context.Background()), "Close waits for the write")
	assert.Equal(t, []string{"sent"}, storedMembers(t, b, c))
}
