package rmq_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq"
)

// exampleClient returns a client on an in-process Redis, and a cleanup.
func exampleClient(opts ...rmq.Option) (*rmq.Client, func()) {
	srv, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: []string{srv.Addr()}})
	c, err := rmq.New(rdb, append([]rmq.Option{rmq.WithNamespace("shop")}, opts...)...)
	if err != nil {
		panic(err)
	}
	return c, func() { _ = c.Close(context.Background()); rdb.Close(); srv.Close() }
}

// consumeUntil runs c until n messages were handled by handle.
func consumeUntil(c *rmq.Client, topic string, n int, handle func(m *rmq.Message) error) {
	done := make(chan struct{})
	seen := 0
	err := c.Subscribe(topic, rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		err := handle(m)
		if seen++; seen == n {
			close(done)
		}
		return err
	}))
	if err != nil {
		panic(err)
	}
	go c.Start(context.Background())
	<-done
	_ = c.Close(context.Background())
}

// Many price changes of one product within five seconds become one render.
func ExampleRangeMergeMessage() {
	c, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "render", SlotAmount: 64, Type: rmq.RangeMerge}); err != nil {
		panic(err)
	}
	first := time.Now()
	for range 3 {
		err := c.Producer().Send(ctx, rmq.RangeMergeMessage{
			Topic: "render", Content: []byte("sku:42"), TimeRange: 50 * time.Millisecond, SlotBasis: "sku:42"})
		if err != nil {
			panic(err)
		}
	}
	consumeUntil(c, "render", 1, func(m *rmq.Message) error {
		fmt.Printf("render %s once; due 50ms after the first send: %v\n", m.Content,
			m.Due.Sub(first).Round(10*time.Millisecond) == 50*time.Millisecond)
		return nil
	})
	st, _ := c.Stats(ctx, "render")
	fmt.Println("left:", st.Store)
	// Output:
	// render sku:42 once; due 50ms after the first send: true
	// left: 0
}

// Higher priorities are consumed first; a duplicate replaces the priority.
func ExamplePriorityMessage() {
	c, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "price", SlotAmount: 1, Type: rmq.Priority}); err != nil {
		panic(err)
	}
	for _, m := range []rmq.PriorityMessage{
		{Topic: "price", Content: []byte("small shop"), Priority: 20},
		{Topic: "price", Content: []byte("key account"), Priority: 900},
		{Topic: "price", Content: []byte("regular"), Priority: 100},
	} {
		if err := c.Producer().Send(ctx, m); err != nil {
			panic(err)
		}
	}
	consumeUntil(c, "price", 3, func(m *rmq.Message) error {
		fmt.Println(string(m.Content), m.Priority)
		return nil
	})
	// Output:
	// key account 900
	// regular 100
	// small shop 20
}

// An order is closed at a fixed time unless the payment cancels it first.
func ExampleFixedTimeMessage() {
	c, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "order-close", SlotAmount: 16, Type: rmq.FixedTime}); err != nil {
		panic(err)
	}
	p := c.Producer()
	at := time.Now().Add(100 * time.Millisecond)
	for _, order := range []string{"order:9", "order:10"} {
		if err := p.Send(ctx, rmq.FixedTimeMessage{Topic: "order-close", Content: []byte(order), FixedTime: at}); err != nil {
			panic(err)
		}
	}
	removed, err := p.Cancel(ctx, "order-close", []byte("order:10"), "") // order 10 was paid
	if err != nil {
		panic(err)
	}
	fmt.Println("cancelled order:10:", removed)
	consumeUntil(c, "order-close", 1, func(m *rmq.Message) error {
		fmt.Println("close", string(m.Content), "on time:", !time.Now().Before(at))
		return nil
	})
	// Output:
	// cancelled order:10: true
	// close order:9 on time: true
}

// A failed message is retried after the backoff, then lands in the dead set.
func ExampleWithRetryBackoff() {
	c, cleanup := exampleClient(rmq.WithRetryBackoff(rmq.SteppedBackoff(time.Millisecond)))
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "jobs", SlotAmount: 4, Type: rmq.Priority}); err != nil {
		panic(err)
	}
	if err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "jobs", Content: []byte("job:1"), Priority: 50}); err != nil {
		panic(err)
	}
	consumeUntil(c, "jobs", rmq.MaxRetries+1, func(m *rmq.Message) error {
		if m.RetriesLeft == 0 {
			fmt.Println("attempt", m.Attempt, "fails for the last time")
		}
		return fmt.Errorf("always fails")
	})
	dead, _ := c.DeadMessages(ctx, "jobs", 10)
	fmt.Println("dead:", string(dead[0].Content))
	// Output:
	// attempt 17 fails for the last time
	// dead: job:1
}

// A listener checks that it still owns the slot before a side effect that
// must not happen twice at once.
func ExampleOwned() {
	c, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "ledger", SlotAmount: 8, Type: rmq.Priority}); err != nil {
		panic(err)
	}
	if err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "ledger", Content: []byte("credit:7"), Priority: 30, SlotBasis: "account:7"}); err != nil {
		panic(err)
	}
	fmt.Println("outside a listener:", rmq.Owned(ctx))
	done := make(chan struct{})
	_ = c.Subscribe("ledger", rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		defer close(done)
		if !rmq.Owned(ctx) {
			return rmq.ErrNotOwner
		}
		fmt.Println("apply", string(m.Content), "in slot", m.Slot)
		return nil
	}))
	go c.Start(ctx)
	<-done
	_ = c.Close(ctx)
	// Output:
	// outside a listener: false
	// apply credit:7 in slot 3
}

// Concurrent Sends share one connection of the producer's own; with the
// option off they go through the go-redis client, where its hooks (tracing,
// metrics) see every command.
func ExampleWithSendStream() {
	c, cleanup := exampleClient(rmq.WithSendStream(false))
	defer cleanup()
	defer c.Close(context.Background())
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "audit", SlotAmount: 8, Type: rmq.Priority}); err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			msg := rmq.PriorityMessage{Topic: "audit", Content: fmt.Appendf(nil, "event:%d", i), Priority: 100}
			if err := c.Producer().Send(ctx, msg); err != nil {
				panic(err)
			}
		})
	}
	wg.Wait()
	st, _ := c.Stats(ctx, "audit")
	fmt.Println("stored:", st.Store, "sent:", c.Metrics().Sent)
	// Output:
	// stored: 100 sent: 100
}
