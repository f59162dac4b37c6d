package rmq_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Sends whose ctx ends while they wait count as sent wherever Redis stored
// them: the client's Sent, each topic's and the store agree. The topic's
// counted only the Sends that returned nil.
func TestSentCountsWhatWasStored(t *testing.T) {
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
				c := newClient(t, b, rmq.WithSendStream(stream))
				define(t, c, "counted", 16, rmq.Priority)
				p := c.Producer()
				var wg sync.WaitGroup
				for g := range 8 {
					wg.Go(func() {
						for i := range 150 {
							ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%5)*100*time.Microsecond)
							_ = p.Send(ctx, rmq.PriorityMessage{Topic: "counted", Content: fmt.Appendf(nil, "m%d-%d", g, i), Priority: 20})
							cancel()
						}
					})
				}
				wg.Wait()
				var stored, sent, topicSent int64
				eventually(t, 5*time.Second, "the writes under way are done", func() bool {
					stored = stats(t, c, "counted").Store
					sent = c.Metrics().Sent
					topicSent = c.TopicMetrics()[0].Sent
					return stored == sent && sent == topicSent
				})
				t.Logf("stored %d, Metrics().Sent %d, TopicMetrics()[counted].Sent %d of %d Sends", stored, sent, topicSent, 8*150)
				assert.Equal(t, stored, sent)
				assert.Equal(t, stored, topicSent)
			})
		}
	})
}
