package rmq_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rmq-go/rmq"
)

// An operator pauses a topic while its downstream is being repaired: every
// consumer of the namespace stops taking its messages, sends go on, and on
// resume what became due meanwhile is delivered at once.
func ExampleClient_PauseTopic() {
	c, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "price", SlotAmount: 4, Type: rmq.Priority}); err != nil {
		panic(err)
	}
	if err := c.PauseTopic(ctx, "price"); err != nil {
		panic(err)
	}
	if err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "price", Content: []byte("sku:42"), Priority: 100}); err != nil {
		panic(err)
	}
	st, _ := c.Stats(ctx, "price")
	fmt.Println("paused:", st.Paused, "waiting:", st.Store)
	if err := c.ResumeTopic(ctx, "price"); err != nil {
		panic(err)
	}
	consumeUntil(c, "price", 1, func(m *rmq.Message) error {
		fmt.Println("delivered after resume:", string(m.Content))
		return nil
	})
	// Output:
	// paused: true waiting: 1
	// delivered after resume: sku:42
}

// A rate limit holds for the whole namespace, however many processes
// consume the topic; bad limits change nothing.
func ExampleClient_SetRateLimit() {
	c, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "mail", SlotAmount: 8, Type: rmq.Priority}); err != nil {
		panic(err)
	}
	if err := c.SetRateLimit(ctx, "mail", rmq.RateLimit{PerSecond: 500, Burst: 50}); err != nil {
		panic(err)
	}
	err := c.SetRateLimit(ctx, "mail", rmq.RateLimit{PerSecond: 100}) // a rate needs a burst
	fmt.Println(errors.Is(err, rmq.ErrInvalidRateLimit))
	st, _ := c.Stats(ctx, "mail")
	fmt.Println(st.RateLimit)
	// Output:
	// true
	// 500/s, burst 50
}

// A subscription's breaker holds a topic back while its listener fails
// most calls, instead of spending every message's retries.
func ExampleWithBreaker() {
	c, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "sync", SlotAmount: 4, Type: rmq.Priority}); err != nil {
		panic(err)
	}
	err := c.Subscribe("sync", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
		return errors.New("partner API is down")
	}), rmq.WithBreaker(rmq.Breaker{FailureRatio: 0.5, MinCalls: 10, OpenFor: 30 * time.Second}))
	fmt.Println(err)
	for i := range 50 {
		msg := rmq.PriorityMessage{Topic: "sync", Content: fmt.Appendf(nil, "order:%d", i), Priority: 20}
		if err := c.Producer().Send(ctx, msg); err != nil {
			panic(err)
		}
	}
	go c.Start(ctx)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := c.TopicMetrics(); len(m) == 1 && m[0].Breaker == rmq.BreakerOpen {
			break
		}
	}
	m := c.TopicMetrics()[0]
	st, _ := c.Stats(ctx, "sync")
	fmt.Println("breaker:", m.Breaker, "calls before it opened, at most 20:", m.Delivered <= 20)
	fmt.Println("dead:", st.Dead, "kept:", st.Pending()+st.Prepare)
	// Output:
	// <nil>
	// breaker: open calls before it opened, at most 20: true
	// dead: 0 kept: 50
}

// DeleteTopic refuses a topic that still holds messages unless told to
// delete them too.
func ExampleClient_DeleteTopic() {
	c, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "old", SlotAmount: 2, Type: rmq.Priority}); err != nil {
		panic(err)
	}
	if err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "old", Content: []byte("x"), Priority: 20}); err != nil {
		panic(err)
	}
	err := c.DeleteTopic(ctx, "old")
	fmt.Println(errors.Is(err, rmq.ErrTopicNotEmpty))
	fmt.Println(c.DeleteTopic(ctx, "old", rmq.Force()))
	_, err = c.Stats(ctx, "old")
	fmt.Println(errors.Is(err, rmq.ErrUnknownTopic))
	// Output:
	// true
	// <nil>
	// true
}
