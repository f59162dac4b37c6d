package rmqprom_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/rmqprom"
)

// gather scrapes reg and returns every sample by its series name, e.g.
// `rmq_deliveries_total{outcome="fail",topic="t"}`; histograms give
// name_count, name_sum and name_bucket{…,le="…"}.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := make(map[string]float64)
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := labelText(m.GetLabel())
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[mf.GetName()+labels] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[mf.GetName()+labels] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				out[mf.GetName()+"_count"+labels] = float64(h.GetSampleCount())
				out[mf.GetName()+"_sum"+labels] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					le := &dto.LabelPair{Name: ptr("le"), Value: ptr(fmt.Sprint(b.GetUpperBound()))}
					out[mf.GetName()+"_bucket"+labelText(append(m.GetLabel(), le))] = float64(b.GetCumulativeCount())
				}
			}
		}
	}
	return out
}

func ptr(s string) *string { return &s }

// labelText formats labels as {a="x",b="y"}, sorted by name.
func labelText(ls []*dto.LabelPair) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprintf("%s=%q", l.GetName(), l.GetValue())
	}
	sort.Strings(parts)
	return "{" + strings.Join(parts, ",") + "}"
}

// The collector exposes the contract's names, types and labels with this
// process's counters and the namespace's backlogs.
func TestCollectorExposesTopicMetricsAndBacklogs(t *testing.T) {
	forEachRedisAtOnce(t, func(t *testing.T, r *redis.Client) {
		ctx := context.Background()
		c, err := rmq.New(r, rmq.WithNamespace(namespace(t, r)), rmq.WithRetryBackoff(rmq.NoBackoff))
		require.NoError(t, err)
		for _, tp := range []rmq.Topic{{Name: "fixed", SlotAmount: 4, Type: rmq.FixedTime},
			{Name: "merge", SlotAmount: 2, Type: rmq.RangeMerge}, {Name: "prio", SlotAmount: 2, Type: rmq.Priority}} {
			require.NoError(t, c.DefineTopic(ctx, tp))
		}
		calls := make(chan string, 100)
		require.NoError(t, c.Subscribe("fixed", rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
			calls <- string(m.Content)
			if string(m.Content) == "bad" {
				return errors.New("always fails")
			}
			return nil
		})))
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		t.Cleanup(func() {
			require.NoError(t, c.Close(context.Background()))
			require.NoError(t, <-done)
		})
		p := c.Producer()
		for _, s := range []string{"a", "b", "c", "bad"} { // each due shortly after its send, however slow the sends
			require.NoError(t, p.Send(ctx, rmq.FixedTimeMessage{Topic: "fixed", Content: []byte(s), FixedTime: time.Now().Add(50 * time.Millisecond)}))
		}
		require.NoError(t, p.Send(ctx, rmq.RangeMergeMessage{Topic: "merge", Content: []byte("m"), TimeRange: time.Millisecond}))
		require.NoError(t, p.SendBatch(ctx, rmq.PriorityMessage{Topic: "prio", Content: []byte("x"), Priority: 20},
			rmq.PriorityMessage{Topic: "prio", Content: []byte("y"), Priority: 30}))

		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(rmqprom.NewCollector(c))
		var s map[string]float64
		require.Eventually(t, func() bool {
			s = gather(t, reg)
			return s[`rmq_dead_total{topic="fixed"}`] == 1 && s[`rmq_owned_slots{topic="fixed"}`] == 4 &&
				s[`rmq_backlog_messages{state="dead",topic="fixed"}`] == 1
		}, 20*time.Second, 50*time.Millisecond, "the bad message did not die")
		time.Sleep(1100 * time.Millisecond) // past the backlog cache, for the merge message's age
		s = gather(t, reg)

		for topic, n := range map[string]float64{"fixed": 4, "merge": 1, "prio": 2} {
			assert.Equal(t, n, s[`rmq_messages_sent_total{topic="`+topic+`"}`], topic)
		}
		assert.Equal(t, 3.0, s[`rmq_deliveries_total{outcome="commit",topic="fixed"}`])
		assert.Equal(t, float64(1+rmq.MaxRetries), s[`rmq_deliveries_total{outcome="fail",topic="fixed"}`])
		assert.Contains(t, s, `rmq_deliveries_total{outcome="not_owner",topic="fixed"}`)
		assert.Contains(t, s, `rmq_deliveries_total{outcome="restored",topic="fixed"}`)
		assert.Equal(t, float64(rmq.MaxRetries), s[`rmq_redeliveries_total{topic="fixed"}`])
		assert.Equal(t, 1.0, s[`rmq_dead_total{topic="fixed"}`])
		assert.Equal(t, 4.0, s[`rmq_delivery_lateness_seconds_count{topic="fixed"}`], "first deliveries")
		assert.Equal(t, float64(4+rmq.MaxRetries), s[`rmq_listener_duration_seconds_count{topic="fixed"}`])
		assert.Equal(t, 4.0, s[`rmq_owned_slots{topic="fixed"}`])
		assert.Equal(t, 0.0, s[`rmq_owned_slots{topic="prio"}`])
		assert.Contains(t, s, `rmq_declined_slots{topic="fixed"}`)
		assert.Equal(t, 0.0, s[`rmq_declined_slots{topic="fixed"}`], "no master out of reach")
		checkCumulative(t, s, "rmq_delivery_lateness_seconds", "fixed", rmq.LatenessBuckets)
		checkCumulative(t, s, "rmq_listener_duration_seconds", "fixed", rmq.DurationBuckets)

		backlog := func(topic, state string) float64 {
			return s[`rmq_backlog_messages{state="`+state+`",topic="`+topic+`"}`]
		}
		assert.Equal(t, []float64{0, 0, 0, 1}, []float64{backlog("fixed", "store"), backlog("fixed", "retry"), backlog("fixed", "prepare"), backlog("fixed", "dead")})
		assert.Equal(t, 1.0, backlog("merge", "store"))
		assert.Equal(t, 2.0, backlog("prio", "store"))
		assert.Greater(t, s[`rmq_oldest_due_age_seconds{topic="merge"}`], 1.0, "the merge message is due and never consumed")
		assert.Equal(t, 0.0, s[`rmq_oldest_due_age_seconds{topic="prio"}`])
		assert.Contains(t, s, `rmq_oldest_due_age_seconds{topic="fixed"}`)
	})
}

// checkCumulative checks that a histogram's buckets are the given bounds,
// non-decreasing, and at most its count.
func checkCumulative(t *testing.T, s map[string]float64, name, topic string, bounds []float64) {
	t.Helper()
	prev := 0.0
	for _, b := range bounds {
		key := fmt.Sprintf(`%s_bucket{le="%s",topic="%s"}`, name, fmt.Sprint(b), topic)
		v, ok := s[key]
		require.True(t, ok, "missing %s", key)
		assert.GreaterOrEqual(t, v, prev, key)
		prev = v
	}
	assert.LessOrEqual(t, prev, s[name+`_count{topic="`+topic+`"}`])
}

// The metrics pass client_golang's linter (names, units, help).
func TestCollectorPassesLint(t *testing.T) {
	r := miniRedis(t)
	c, err := rmq.New(r, rmq.WithNamespace("lint"))
	require.NoError(t, err)
	require.NoError(t, c.DefineTopic(context.Background(), rmq.Topic{Name: "t", SlotAmount: 2, Type: rmq.FixedTime}))
	problems, err := testutil.CollectAndLint(rmqprom.NewCollector(c))
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, 9+4+1+3+3+2+4+1+2+7, testutil.CollectAndCount(rmqprom.NewCollector(c)),
		"topic t's 9 counter and gauge series (declined slots among them), 4 breaker states, breaker openings, 3 breaker transitions, 3 held-back reasons, 2 histograms, "+
			"4 backlog states, the oldest due age, paused and rate limit; the client's 7 counters")
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A Redis that never answers costs a scrape at most the timeout: the
// backlog is logged and left out, the process's counters still come.
func TestCollectorBoundsAScrapeOfAHungRedis(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			conn, err := ln.Accept() // accept, never answer
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	r := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), ReadTimeout: 10 * time.Second, MaxRetries: -1})
	t.Cleanup(func() { r.Close() })
	c, err := rmq.New(r, rmq.WithNamespace("hung"))
	require.NoError(t, err)
	var logs syncBuffer
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c, rmqprom.WithTimeout(300*time.Millisecond),
		rmqprom.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))

	start := time.Now()
	s := gather(t, reg)
	assert.Less(t, time.Since(start), 3*time.Second, "the scrape waited for the hung Redis")
	assert.Empty(t, withoutClientCounters(t, s), "no topic known, no backlog readable")
	assert.Contains(t, logs.String(), "took longer than the timeout")

	s = gather(t, reg)
	assert.Empty(t, withoutClientCounters(t, s))
	assert.Contains(t, logs.String(), "still running", "a second scrape does not pile reads on the hung Redis")
}

// clientCounters are the series of the client's own counters, which need
// no Redis.
var clientCounters = []string{"rmq_send_retries_total{}", "rmq_sends_abandoned_total{}",
	"rmq_consumer_redis_errors_total{}", "rmq_fenced_pops_total{}", "rmq_send_writes_total{}",
	"rmq_sends_written_total{}", "rmq_listener_panics_total{}"}

// withoutClientCounters checks that s has the client's counters and returns
// the rest.
func withoutClientCounters(t *testing.T, s map[string]float64) map[string]float64 {
	t.Helper()
	rest := maps.Clone(s)
	for _, k := range clientCounters {
		assert.Contains(t, s, k)
		delete(rest, k)
	}
	return rest
}

// The client's own counters are series without labels: here a Send whose
// ctx had ended is abandoned, a live one is written, and its listener panics
// once before it commits.
func TestCollectorExposesClientCounters(t *testing.T) {
	r := miniRedis(t)
	c, err := rmq.New(r, rmq.WithNamespace("client"), rmq.WithRetryBackoff(rmq.NoBackoff))
	require.NoError(t, err)
	require.NoError(t, c.DefineTopic(context.Background(), rmq.Topic{Name: "t", SlotAmount: 2, Type: rmq.Priority}))
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, c.Producer().Send(ended, rmq.PriorityMessage{Topic: "t", Content: []byte("x"), Priority: 20}), context.Canceled)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c))
	s := gather(t, reg)
	withoutClientCounters(t, s)
	assert.Equal(t, 1.0, s[`rmq_sends_abandoned_total{}`])
	for _, k := range clientCounters {
		if k != `rmq_sends_abandoned_total{}` {
			assert.Zero(t, s[k], k)
		}
	}
	assert.Equal(t, 0.0, s[`rmq_messages_sent_total{topic="t"}`])

	var calls atomic.Int32
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
		if calls.Add(1) == 1 {
			panic("listener bug")
		}
		return nil
	})))
	done := make(chan error, 1)
	go func() { done <- c.Start(context.Background()) }()
	t.Cleanup(func() {
		require.NoError(t, c.Close(context.Background()))
		require.NoError(t, <-done)
	})
	require.NoError(t, c.Producer().Send(context.Background(), rmq.PriorityMessage{Topic: "t", Content: []byte("y"), Priority: 20}))
	require.Eventually(t, func() bool { return c.Metrics().Delivered == 2 }, 5*time.Second, 10*time.Millisecond)
	s = gather(t, reg)
	assert.Equal(t, 1.0, s[`rmq_send_writes_total{}`])
	assert.Equal(t, 1.0, s[`rmq_sends_written_total{}`])
	assert.Equal(t, 1.0, s[`rmq_listener_panics_total{}`])
	assert.Equal(t, 1.0, s[`rmq_deliveries_total{outcome="fail",topic="t"}`], "a panic is a fail too")
	assert.Equal(t, 1.0, s[`rmq_messages_sent_total{topic="t"}`])
}

// A Redis that fails is logged and left out; nothing panics.
func TestCollectorLogsAndOmitsAFailingRedis(t *testing.T) {
	r := miniRedis(t)
	ctx := context.Background()
	c, err := rmq.New(r, rmq.WithNamespace("failing"))
	require.NoError(t, err)
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: 2, Type: rmq.Priority}))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("x"), Priority: 20}))
	var logs syncBuffer
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c, rmqprom.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))
	require.NoError(t, r.Close())

	s := gather(t, reg)
	assert.Equal(t, 1.0, s[`rmq_messages_sent_total{topic="t"}`])
	assert.NotContains(t, s, `rmq_backlog_messages{state="store",topic="t"}`)
	assert.Contains(t, logs.String(), "listing topics failed")
}

// Importing RMQ never links the Prometheus client (nor the browser test's
// chromedp): this module is where it lives.
func TestCoreModuleDoesNotDependOnPrometheus(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./...")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "github.com/rmq-go/rmq\n")
	for _, dep := range []string{"prometheus", "chromedp"} {
		assert.NotContains(t, string(out), dep)
	}
}

// The collector exposes the topic's pause and rate limit (namespace-wide),
// this process's breaker state and what it held back.
func TestCollectorExposesFlowControl(t *testing.T) {
	forEachRedis(t, func(t *testing.T, r *redis.Client) {
		ctx := context.Background()
		c, err := rmq.New(r, rmq.WithNamespace(namespace(t, r)), rmq.WithRetryBackoff(rmq.NoBackoff))
		require.NoError(t, err)
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "p", SlotAmount: 2, Type: rmq.Priority}))
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "q", SlotAmount: 2, Type: rmq.Priority}))
		require.NoError(t, c.Subscribe("p", rmq.ListenerFunc(func(context.Context, *rmq.Message) error {
			return errors.New("down")
		}), rmq.WithBreaker(rmq.Breaker{FailureRatio: 0.5, MinCalls: 4, OpenFor: time.Minute})))
		require.NoError(t, c.SetRateLimit(ctx, "q", rmq.RateLimit{PerSecond: 250, Burst: 10}))
		require.NoError(t, c.PauseTopic(ctx, "q"))
		require.NoError(t, c.Subscribe("q", rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return nil })))
		done := make(chan error, 1)
		go func() { done <- c.Start(ctx) }()
		t.Cleanup(func() {
			require.NoError(t, c.Close(context.Background()))
			require.NoError(t, <-done)
		})
		var msgs []rmq.OutgoingMessage
		for i := range 10 {
			msgs = append(msgs, rmq.PriorityMessage{Topic: "p", Content: fmt.Appendf(nil, "m%d", i), Priority: 20},
				rmq.PriorityMessage{Topic: "q", Content: fmt.Appendf(nil, "m%d", i), Priority: 20})
		}
		require.NoError(t, c.Producer().SendBatch(ctx, msgs...))

		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(rmqprom.NewCollector(c))
		var s map[string]float64
		require.Eventually(t, func() bool {
			s = gather(t, reg)
			return s[`rmq_breaker_state{state="open",topic="p"}`] == 1 && s[`rmq_held_back_total{reason="pause",topic="q"}`] > 0
		}, 20*time.Second, 50*time.Millisecond, "the breaker did not open, or the pause held nothing back")
		assert.Equal(t, 0.0, s[`rmq_breaker_state{state="closed",topic="p"}`])
		assert.Equal(t, 1.0, s[`rmq_breaker_opened_total{topic="p"}`])
		assert.Equal(t, 1.0, s[`rmq_breaker_transitions_total{to="open",topic="p"}`])
		assert.Equal(t, 0.0, s[`rmq_breaker_transitions_total{to="half-open",topic="p"}`], "open for a minute")
		assert.Equal(t, 0.0, s[`rmq_breaker_transitions_total{to="closed",topic="p"}`])
		assert.Equal(t, 0.0, s[`rmq_breaker_transitions_total{to="open",topic="q"}`])
		assert.Equal(t, 1.0, s[`rmq_breaker_state{state="closed",topic="q"}`])
		assert.Equal(t, 1.0, s[`rmq_topic_paused{topic="q"}`])
		assert.Equal(t, 0.0, s[`rmq_topic_paused{topic="p"}`])
		assert.Equal(t, 250.0, s[`rmq_rate_limit_per_second{topic="q"}`])
		assert.Equal(t, 0.0, s[`rmq_rate_limit_per_second{topic="p"}`])
		assert.Contains(t, s, `rmq_held_back_total{reason="breaker",topic="p"}`)
		assert.Contains(t, s, `rmq_held_back_total{reason="limit",topic="q"}`)
	})
}

// failControl is a go-redis hook that fails every read of the flow control
// hash.
type failControl struct{}

func (failControl) DialHook(next redis.DialHook) redis.DialHook { return next }

func (failControl) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if key, ok := hashRead(cmd); ok && strings.HasSuffix(key, "}:control") {
			err := errors.New("control hash unreadable")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (failControl) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// When only the flow control cannot be read, the log says why, and the
// backlog gauges still come without the pause and rate limit ones.
func TestCollectorLogsWhyFlowControlIsUnreadable(t *testing.T) {
	r := miniRedis(t)
	ctx := context.Background()
	c, err := rmq.New(r, rmq.WithNamespace("flowfail"))
	require.NoError(t, err)
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: 2, Type: rmq.Priority}))
	r.AddHook(failControl{})
	var logs syncBuffer
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(rmqprom.NewCollector(c, rmqprom.WithLogger(slog.New(slog.NewTextHandler(&logs, nil)))))

	s := gather(t, reg)
	assert.Contains(t, s, `rmq_backlog_messages{state="store",topic="t"}`)
	assert.NotContains(t, s, `rmq_topic_paused{topic="t"}`)
	assert.Contains(t, logs.String(), "reading flow control failed")
	assert.Contains(t, logs.String(), "control hash unreadable", "the log names the flow control's error")
}
