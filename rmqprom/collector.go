// Package rmqprom exposes an RMQ client's metrics to Prometheus:
//
//	reg.MustRegister(rmqprom.NewCollector(c))
//
// Counters and histograms are this process's (Client.TopicMetrics), as
// Prometheus expects one series per instance: sum them across instances in
// PromQL. Backlog gauges are the namespace's, read from Redis at each scrape
// (Client.Backlog, O(slots) per topic, cached a second) for every topic of
// the namespace, within a time limit; a topic whose backlog cannot be read
// in time is logged and left out of that scrape.
//
// It lives in a module of its own so that importing RMQ never links the
// Prometheus client. To tell several clients' namespaces apart, register
// each collector with prometheus.WrapRegistererWith and a namespace label.
package rmqprom

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rmq-go/rmq"
)

// DefaultTimeout bounds the Redis reads of one scrape unless WithTimeout
// says otherwise.
const DefaultTimeout = 5 * time.Second

// Collector is a prometheus.Collector of one RMQ client's metrics. Safe for
// concurrent scrapes.
type Collector struct {
	c       *rmq.Client
	timeout time.Duration
	log     *slog.Logger
	d       descs
	reading atomic.Bool // a backlog read is running
}

// Option configures a Collector.
type Option func(*Collector)

// WithTimeout bounds the Redis reads of one scrape (default DefaultTimeout);
// d ≤ 0 keeps the default.
func WithTimeout(d time.Duration) Option {
	return func(col *Collector) {
		if d > 0 {
			col.timeout = d
		}
	}
}

// WithLogger logs failed backlog reads to l (default: nowhere).
func WithLogger(l *slog.Logger) Option {
	return func(col *Collector) {
		if l != nil {
			col.log = l
		}
	}
}

// NewCollector returns the collector of c's metrics.
func NewCollector(c *rmq.Client, opts ...Option) *Collector {
	col := &Collector{c: c, timeout: DefaultTimeout, log: slog.New(slog.NewTextHandler(io.Discard, nil)), d: newDescs()}
	for _, o := range opts {
		if o != nil {
			o(col)
		}
	}
	return col
}

// Describe implements prometheus.Collector.
func (col *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range col.d.all() {
		ch <- d
	}
}

// Collect implements prometheus.Collector: this process's counters and
// histograms, then the namespace's backlog gauges.
func (col *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range col.c.TopicMetrics() {
		col.collectTopic(ch, m)
	}
	col.collectBacklogs(ch)
}

// collectTopic sends one topic's counters, histograms and owned slots.
func (col *Collector) collectTopic(ch chan<- prometheus.Metric, m rmq.TopicMetrics) {
	d, t := &col.d, m.Topic
	counter := func(desc *prometheus.Desc, n int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(n), labels...)
	}
	counter(d.sent, m.Sent, t)
	counter(d.deliveries, m.Committed, t, "commit")
	counter(d.deliveries, m.Failed, t, "fail")
	counter(d.deliveries, m.NotOwner, t, "not_owner")
	counter(d.deliveries, m.Restored, t, "restored")
	counter(d.redeliveries, m.Redelivered, t)
	counter(d.dead, m.Dead, t)
	ch <- constHistogram(d.lateness, m.Lateness, t)
	ch <- constHistogram(d.duration, m.ListenerDuration, t)
	ch <- prometheus.MustNewConstMetric(d.owned, prometheus.GaugeValue, float64(m.OwnedSlots), t)
	for _, st := range []string{rmq.BreakerClosed, rmq.BreakerOpen, rmq.BreakerHalfOpen, rmq.BreakerOff} {
		v := 0.0
		if st == m.Breaker {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(d.breaker, prometheus.GaugeValue, v, t, st)
	}
	counter(d.breakerOpened, m.BreakerOpened, t)
	for _, r := range []string{"pause", "limit", "breaker"} {
		counter(d.heldBack, m.HeldBack[r], t, r)
	}
}

// constHistogram turns h (per-bucket counts) into a const histogram with
// cumulative buckets.
func constHistogram(desc *prometheus.Desc, h rmq.Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	var cum uint64
	for i, b := range h.Bounds {
		if i < len(h.Counts) {
			cum += h.Counts[i]
		}
		buckets[b] = cum
	}
	return prometheus.MustNewConstHistogram(desc, h.Count, h.Sum, buckets, labels...)
}

// collectBacklogs sends the backlog gauges of every topic of the namespace
// read within the collector's timeout. The reads run on a goroutine of their
// own, so a scrape returns in time even when the Redis client ignores
// context deadlines; while one is still running after its scrape gave up,
// later scrapes leave the backlog out rather than pile more reads on Redis.
// Failures are logged and left out.
func (col *Collector) collectBacklogs(ch chan<- prometheus.Metric) {
	if !col.reading.CompareAndSwap(false, true) {
		col.log.Warn("rmqprom: an earlier backlog read is still running; no backlog gauges in this scrape")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), col.timeout)
	backlogs := make(chan topicState)
	go func() {
		defer col.reading.Store(false)
		defer cancel()
		defer close(backlogs)
		col.readBacklogs(ctx, backlogs)
	}()
	d := &col.d
	for {
		select {
		case ts, ok := <-backlogs:
			if !ok {
				return
			}
			b := ts.backlog
			for _, s := range []struct {
				state string
				n     int64
			}{{"store", b.Store}, {"retry", b.Retry}, {"prepare", b.Prepare}, {"dead", b.Dead}} {
				ch <- prometheus.MustNewConstMetric(d.backlog, prometheus.GaugeValue, float64(s.n), b.Topic, s.state)
			}
			ch <- prometheus.MustNewConstMetric(d.oldestDue, prometheus.GaugeValue, b.OldestDueAge.Seconds(), b.Topic)
			if ts.flowKnown {
				paused := 0.0
				if ts.flow.Paused {
					paused = 1
				}
				ch <- prometheus.MustNewConstMetric(d.paused, prometheus.GaugeValue, paused, b.Topic)
				ch <- prometheus.MustNewConstMetric(d.rateLimit, prometheus.GaugeValue, ts.flow.RateLimit.PerSecond, b.Topic)
			}
		case <-ctx.Done():
			col.log.Warn("rmqprom: reading backlogs took longer than the timeout; the rest are left out of this scrape", "timeout", col.timeout)
			return
		}
	}
}

// topicState is what a scrape reads from Redis for one topic.
type topicState struct {
	backlog   rmq.Backlog
	flow      rmq.FlowControl
	flowKnown bool
}

// readBacklogs sends the backlog and flow control of every topic of the
// namespace to out, until ctx ends.
func (col *Collector) readBacklogs(ctx context.Context, out chan<- topicState) {
	topics, err := col.c.Topics(ctx)
	if err != nil {
		col.log.Warn("rmqprom: listing topics failed; no backlog gauges in this scrape", "err", err)
		return
	}
	flows, ferr := col.c.FlowControls(ctx)
	if ferr != nil && ctx.Err() == nil {
		col.log.Warn("rmqprom: reading flow control failed; no pause or rate limit gauges in this scrape", "err", err)
	}
	for _, t := range topics {
		b, err := col.c.Backlog(ctx, t.Name)
		if err != nil {
			if ctx.Err() == nil {
				col.log.Warn("rmqprom: reading a backlog failed; its gauges are left out of this scrape", "topic", t.Name, "err", err)
			}
			continue
		}
		select {
		case out <- topicState{backlog: b, flow: flows[t.Name], flowKnown: ferr == nil}:
		case <-ctx.Done():
			return
		}
	}
}
