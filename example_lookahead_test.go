package rmq_test

import (
	"context"
	"fmt"
	"time"

	"github.com/rmq-go/rmq"
)

// Reminders due over the next seconds, a few per second: with a lookahead
// each slot's pop also takes what falls due within it, and the slot's
// thread hands every reminder over at its own due time, never early.
func ExampleWithLookahead() {
	c, cleanup := exampleClient()
	defer cleanup()
	ctx := context.Background()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: "remind", SlotAmount: 1, Type: rmq.FixedTime}); err != nil {
		panic(err)
	}
	start := time.Now()
	var msgs []rmq.OutgoingMessage
	for i := range 3 {
		msgs = append(msgs, rmq.FixedTimeMessage{Topic: "remind", Content: fmt.Appendf(nil, "reminder %d", i),
			FixedTime: start.Add(time.Duration(100+50*i) * time.Millisecond)})
	}
	if err := c.Producer().SendBatch(ctx, msgs...); err != nil {
		panic(err)
	}
	done := make(chan struct{})
	n := 0
	err := c.Subscribe("remind", rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
		fmt.Println(string(m.Content), "on time:", !time.Now().Before(m.Due))
		if n++; n == len(msgs) {
			close(done)
		}
		return nil
	}), rmq.WithLookahead(time.Second))
	if err != nil {
		panic(err)
	}
	go c.Start(ctx)
	<-done
	_ = c.Close(ctx)
	// Output:
	// reminder 0 on time: true
	// reminder 1 on time: true
	// reminder 2 on time: true
}
