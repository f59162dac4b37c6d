package rmqprom_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// processSeries returns the names of s's series that carry this
// process's per-topic metrics for topic.
func processSeries(s map[string]float64, topic string) []string {
	var out []string
	for k := range s {
		if strings.Contains(k, `topic="`+topic+`"`) && !strings.HasPrefix(k, "rmq_backlog_messages") &&
			!strings.HasPrefix(k, "rmq_oldest_due_age_seconds") && !strings.HasPrefix(k, "rmq_topic_paused") &&
			!strings.HasPrefix(k, "rmq_rate_limit_per_second") {
			out = append(out, k)
		}
	}
	return out
}

// A scrape must not make the process's own per-topic series appear for a
// topic this process never sent to, consumed or looked up: the collector's
// own backlog reads are not the process's use of the topic. Otherwise every
// instance exports ~60 zero series per topic of the namespace, and the set of
// series changes between two scrapes with nothing happening in between.
func TestScrapeDoesNotAddProcessSeriesOfUnusedTopics(t *testing.T) {
	r := realRedis(t)
	ctx := context.Background()
	ns := namespace(t, r)
	c, err := rmq.New(r, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	other, err := rmq.New(r, rmq.WithNamespace(ns)) // another process of the namespace
	require.NoError(t, err)
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "mine", SlotAmount: 2, Type: rmq.Priority}))
	require.NoError(t, other.DefineTopic(ctx, rmq.Topic{Name: "theirs", SlotAmount: 2, Type: rmq.Priority}))
	require.NoError(t, other.Producer().Send(ctx, rmq.PriorityMessage{Topic: "theirs", Content: []byte("x"), Priority: 20}))

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c))
	first := gather(t, reg)
	time.Sleep(1100 * time.Millisecond) // past the cache
	second := gather(t, reg)

	for _, s := range []map[string]float64{first, second} {
		assert.Equal(t, 1.0, s[`rmq_backlog_messages{state="store",topic="theirs"}`], "the namespace's gauge")
		assert.NotEmpty(t, processSeries(s, "mine"))
		assert.Empty(t, processSeries(s, "theirs"), "this process never used topic theirs")
	}
	assert.Equal(t, len(first), len(second), "nothing happened between the scrapes, yet the series changed")
}
