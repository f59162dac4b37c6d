package rmqprom_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// A counter never goes down while the process lives: deleting a topic and
// defining it again in the same process must not reset
// rmq_messages_sent_total (nor TopicMetrics, "since New").
func TestSentCounterSurvivesTopicRedefinition(t *testing.T) {
	r := realRedis(t)
	ctx := context.Background()
	c, err := rmq.New(r, rmq.WithNamespace(namespace(t, r)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	tp := rmq.Topic{Name: "t", SlotAmount: 2, Type: rmq.Priority}
	require.NoError(t, c.DefineTopic(ctx, tp))
	for i := range 3 {
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: fmt.Appendf(nil, "a%d", i), Priority: 20}))
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c))
	before := gather(t, reg)[`rmq_messages_sent_total{topic="t"}`]
	require.Equal(t, 3.0, before)

	require.NoError(t, c.DeleteTopic(ctx, "t", rmq.Force()))
	require.NoError(t, c.DefineTopic(ctx, tp))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("b"), Priority: 20}))
	after := gather(t, reg)[`rmq_messages_sent_total{topic="t"}`]
	assert.GreaterOrEqual(t, after, before, "a counter went down without a restart")
	assert.Equal(t, 4.0, after, "four sends by this process since New")
}

// Scrapes running alongside topic definitions, sends and deletions are
// race-free, and a live topic's counters never go down between scrapes.
func TestConcurrentScrapesAreRaceFreeAndMonotonic(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	r := miniRedis(t)
	ctx := context.Background()
	c, err := rmq.New(r, rmq.WithNamespace("race"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "steady", SlotAmount: 4, Type: rmq.Priority}))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c, rmqprom.WithTimeout(2*time.Second)))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "steady", Content: fmt.Appendf(nil, "m%d", i), Priority: 20})
			name := fmt.Sprintf("churn%d", i%5)
			_ = c.DefineTopic(ctx, rmq.Topic{Name: name, SlotAmount: 2, Type: rmq.Priority})
			_ = c.Producer().Send(ctx, rmq.PriorityMessage{Topic: name, Content: []byte("x"), Priority: 20})
			if i%3 == 0 {
				_ = c.DeleteTopic(ctx, name, rmq.Force())
			}
		}
	})
	var bad sync.Map
	for range 4 {
		wg.Go(func() {
			prev := 0.0
			for {
				select {
				case <-stop:
					return
				default:
				}
				mfs, err := reg.Gather()
				if err != nil {
					bad.Store(err.Error(), true)
					continue
				}
				for _, mf := range mfs {
					if mf.GetName() != "rmq_messages_sent_total" {
						continue
					}
					for _, m := range mf.GetMetric() {
						if m.GetLabel()[0].GetValue() == "steady" {
							v := m.GetCounter().GetValue()
							if v < prev {
								bad.Store(fmt.Sprintf("steady went from %v to %v", prev, v), true)
							}
							prev = v
						}
					}
				}
			}
		})
	}
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	bad.Range(func(k, _ any) bool {
		t.Error(k)
		return true
	})
}

// One topic whose stored definition this version cannot read (say a type a
// newer version added) is that topic's problem: the other topics' gauges
// still come.
func TestOneUnreadableDefinitionKeepsTheOtherTopics(t *testing.T) {
	r := realRedis(t)
	ctx := context.Background()
	ns := namespace(t, r)
	c, err := rmq.New(r, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "good", SlotAmount: 2, Type: rmq.Priority}))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "good", Content: []byte("x"), Priority: 20}))
	require.NoError(t, r.HSet(ctx, ns+":topics", "future", `{"slotAmount":2,"type":"Sharded"}`).Err())
	var logs syncBuffer
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c, rmqprom.WithLogger(slogText(&logs))))
	s := gather(t, reg)
	assert.Equal(t, 1.0, s[`rmq_backlog_messages{state="store",topic="good"}`], "logs: %s", logs.String())
}

// Two clients' collectors in one pedantic registry, told apart by a
// namespace label as the README says, gather and lint cleanly.
func TestTwoNamespacesInOneRegistry(t *testing.T) {
	r := miniRedis(t)
	ctx := context.Background()
	reg := prometheus.NewPedanticRegistry()
	for _, ns := range []string{"a", "b"} {
		c, err := rmq.New(r, rmq.WithNamespace(ns))
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "same", SlotAmount: 2, Type: rmq.Priority}))
		require.NoError(t, prometheus.WrapRegistererWith(prometheus.Labels{"namespace": ns}, reg).Register(rmqprom.NewCollector(c)))
	}
	s := gather(t, reg)
	assert.Contains(t, s, `rmq_backlog_messages{namespace="a",state="store",topic="same"}`)
	assert.Contains(t, s, `rmq_backlog_messages{namespace="b",state="store",topic="same"}`)
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	assert.Empty(t, problems)
}
