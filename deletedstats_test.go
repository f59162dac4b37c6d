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

// DeleteTopic's shared metrics stay deleted: the client's own periodic
// flush, which read the topic's figures before the deletion, sent them
// after it and wrote the all-time hash (no TTL) again, for good; a topic
// defined again under the name started with the old counts. Here six
// goroutines define, send to and delete topics of new names for 5 s, so
// that flushes fall inside deletions.
func TestDeletedTopicsSharedMetricsStayDeleted(t *testing.T) {
	t.Parallel() // mostly round trips; the flush waits on a timer
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		c := newClientIn(t, b, ns)
		ctx := context.Background()
		stop := time.Now().Add(5 * time.Second)
		var wg sync.WaitGroup
		var deleted sync.Map
		for g := range 6 {
			wg.Go(func() {
				for i := 0; time.Now().Before(stop); i++ {
					name := fmt.Sprintf("job-%d-%06d", g, i)
					if err := c.DefineTopic(ctx, rmq.Topic{Name: name, SlotAmount: 2, Type: rmq.Priority}); err != nil {
						t.Error(err)
						return
					}
					if err := c.Producer().Send(ctx, rmq.PriorityMessage{Topic: name, Content: []byte("x"), Priority: 20}); err != nil {
						t.Error(err)
						return
					}
					if err := c.DeleteTopic(ctx, name, rmq.Force()); err != nil {
						t.Error(err)
						return
					}
					deleted.Store(name, true)
				}
			})
		}
		wg.Wait()
		time.Sleep(2500 * time.Millisecond) // a flush more
		n, left := 0, []string{}
		deleted.Range(func(k, _ any) bool {
			n++
			key := fmt.Sprintf("%s:{%s}:stats:%s", ns, ns, k)
			if b.Redis.Exists(ctx, key).Val() > 0 {
				left = append(left, key)
			}
			return true
		})
		t.Logf("%d topics defined, sent to and deleted; shared metrics left of them: %d", n, len(left))
		assert.Empty(t, left, "a flush wrote back the shared metrics of deleted topics")
	})
}
