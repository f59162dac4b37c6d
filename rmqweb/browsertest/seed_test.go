package browsertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
)

// The seeded namespace: a Priority topic with a hot key, a FixedTime topic
// consumed by this process (traffic, lateness, a worker), a RangeMerge topic
// with dead messages, a Priority topic whose listener fails (its breaker
// open in this process).
const (
	hotTopic     = "orders"
	liveTopic    = "emails"
	deadTopic    = "renders"
	breakerTopic = "webhooks"
	poison       = "poison-1"
	deadTopicLen = 8 // slots of deadTopic
)

// deadContents are the dead messages of deadTopic, by content; one carries
// markup and bytes that are not text.
var deadContents = []string{poison, "render sku:7 <b>bold</b>", "bin\x00\xff\x1b"}

// seed fills namespace ns and starts a consumer of liveTopic, stopped when t
// ends. It returns the client.
func seed(t *testing.T, r *redis.Client, ns string) *rmq.Client {
	t.Helper()
	ctx := context.Background()
	c, err := rmq.New(r, rmq.WithNamespace(ns))
	require.NoError(t, err)
	for _, tp := range []rmq.Topic{{Name: hotTopic, SlotAmount: 64, Type: rmq.Priority},
		{Name: liveTopic, SlotAmount: 16, Type: rmq.FixedTime}, {Name: deadTopic, SlotAmount: deadTopicLen, Type: rmq.RangeMerge},
		{Name: breakerTopic, SlotAmount: 4, Type: rmq.Priority}} {
		require.NoError(t, c.DefineTopic(ctx, tp))
	}
	p := c.Producer()
	var msgs []rmq.OutgoingMessage
	for i := range 400 {
		basis := fmt.Sprintf("customer-%d", i%37)
		if i%3 == 0 {
			basis = "customer-hot" // a hot key: its slot stands out
		}
		msgs = append(msgs, rmq.PriorityMessage{Topic: hotTopic, Content: fmt.Appendf(nil, "order-%d", i), Priority: int64(20 + i%50), SlotBasis: basis})
	}
	require.NoError(t, p.SendBatch(ctx, msgs...))

	delivered := make(chan struct{}, 1000)
	require.NoError(t, c.Subscribe(liveTopic, rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
		delivered <- struct{}{}
		return nil
	}), rmq.WithThreads(4)))
	require.NoError(t, c.Subscribe(breakerTopic, rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
		return errors.New("endpoint down")
	}), rmq.WithBreaker(rmq.Breaker{FailureRatio: 0.5, MinCalls: 3, OpenFor: time.Hour})))
	done := make(chan error, 1)
	go func() { done <- c.Start(context.Background()) }()
	t.Cleanup(func() {
		require.NoError(t, c.Close(context.Background()))
		require.NoError(t, <-done)
	})
	start := time.Now()
	var mails []rmq.OutgoingMessage
	for i := range 300 {
		due := time.Now().Add(time.Duration(200+i*3) * time.Millisecond)
		mails = append(mails, rmq.FixedTimeMessage{Topic: liveTopic, Content: fmt.Appendf(nil, "mail-%d", i), FixedTime: due})
	}
	mails = append(mails, rmq.FixedTimeMessage{Topic: liveTopic, Content: []byte("reminder tomorrow"), FixedTime: start.Add(24 * time.Hour)})
	require.NoError(t, p.SendBatch(ctx, mails...))
	for range 300 {
		select {
		case <-delivered:
		case <-time.After(30 * time.Second):
			t.Fatal("the live topic's messages were not delivered")
		}
	}
	hot := fmt.Sprintf("%s:{%s:%d}:dead", ns, hotTopic, rmq.SlotIndex([]byte("customer-hot"), 64))
	for i, content := range []string{"order-17 (card declined)", "order-4 \x00\x01"} {
		require.NoError(t, r.ZAdd(ctx, hot, redis.Z{Score: float64(start.Add(time.Duration(-3-i) * time.Minute).UnixMilli()), Member: content}).Err())
	}
	for i, content := range deadContents {
		key := fmt.Sprintf("%s:{%s:%d}:dead", ns, deadTopic, rmq.SlotIndex([]byte(content), deadTopicLen)) // the README's key layout
		require.NoError(t, r.ZAdd(ctx, key, redis.Z{Score: float64(start.Add(time.Duration(-i) * time.Minute).UnixMilli()), Member: content}).Err())
	}
	var hooks []rmq.OutgoingMessage
	for i := range 5 {
		hooks = append(hooks, rmq.PriorityMessage{Topic: breakerTopic, Content: fmt.Appendf(nil, "hook-%d", i), Priority: 20})
	}
	require.NoError(t, p.SendBatch(ctx, hooks...))
	require.Eventually(t, func() bool { // shared metrics and breaker states are flushed every 2 s
		m, _, err := c.NamespaceMetrics(ctx, liveTopic, 1)
		open, oerr := c.OpenBreakers(ctx, breakerTopic)
		return err == nil && m.Delivered >= 300 && oerr == nil && len(open) == 1
	}, 15*time.Second, 100*time.Millisecond)
	return c
}

// deadKeys returns the store and dead keys of content's slot in deadTopic.
func deadKeys(ns, content string) (store, dead string) {
	tag := fmt.Sprintf("%s:{%s:%d}:", ns, deadTopic, rmq.SlotIndex([]byte(content), deadTopicLen))
	return tag + "store", tag + "dead"
}
