// Package rmqprom exposes an RMQ client's metrics to Prometheus:
//
//	reg.MustRegister(rmqprom.NewCollector(c))
//
// Counters and histograms are this process's (Client.TopicMetrics), as
// Prometheus expects one series per instance: sum them across instances in
// PromQL. A topic the client knows only because the collector read its
// backlog has none of them until the process sends to it or consumes it.
// Backlog, pause and rate limit gauges are the namespace's, read from Redis
// for every topic of the namespace (Client.Topics, Client.FlowControls, and
// Client.Backlog: O(slots) per topic) within a time limit, and cached:
// however often it is scraped, a collector reads Redis at most once a
// second. A topic whose backlog cannot be read in time is logged and left
// out of that scrape; the next read starts with it (after it, when that
// read started with it).
//
// It lives in a module of its own so that importing RMQ never links the
// Prometheus client. To tell several clients' namespaces apart, register
// each collector with prometheus.WrapRegistererWith and a namespace label.
package rmqprom

import (
	"io"
	"log/slog"
	"sync"
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

	mu       sync.Mutex
	last     *namespaceRead  // the latest read of the namespace from Redis
	readOnly map[string]bool // topics the client knows only through this collector's reads (readonlytopics.go)
	resume   string          // the topic the last read ran out of time at, where the next starts (resume.go)
	// resumePast: the last read stopped at the first topic it tried; the
	// next starts after it (resume.go).
	resumePast bool
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
		if !col.onlyRead(m) {
			col.collectTopic(ch, m)
		}
	}
	col.collectClient(ch)
	col.collectBacklogs(ch)
}

// collectClient sends the client's own counters, which no topic has.
func (col *Collector) collectClient(ch chan<- prometheus.Metric) {
	m, d := col.c.Metrics(), &col.d
	for _, c := range []struct {
		desc *prometheus.Desc
		n    int64
	}{{d.sendRetries, m.SendRetries}, {d.sendsAbandoned, m.SendsAbandoned}, {d.redisErrors, m.RedisErrors}, {d.fenced, m.Fenced},
		{d.sendWrites, m.SendWrites}, {d.sendsWritten, m.SendsWritten}, {d.panics, m.Panics}} {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(c.n))
	}
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
	ch <- prometheus.MustNewConstMetric(d.declined, prometheus.GaugeValue, float64(m.DeclinedSlots), t)
	for _, st := range []string{rmq.BreakerClosed, rmq.BreakerOpen, rmq.BreakerHalfOpen, rmq.BreakerOff} {
		v := 0.0
		if st == m.Breaker {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(d.breaker, prometheus.GaugeValue, v, t, st)
	}
	counter(d.breakerOpened, m.BreakerOpened, t)
	for _, st := range []string{rmq.BreakerOpen, rmq.BreakerHalfOpen, rmq.BreakerClosed} {
		counter(d.breakerTransitions, m.BreakerTransitions[st], t, st)
	}
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

// collectBacklogs sends the gauges read from Redis (backlogs, pause, rate
// limit) for every topic of the namespace, from the read currentRead picks:
// it waits for that read until the read's deadline, and then sends what it
// got so far. A scrape that gets a read cut short by its deadline logs it,
// whether it waited for that read or was served from it later.
func (col *Collector) collectBacklogs(ch chan<- prometheus.Metric) {
	r := col.currentRead(time.Now())
	if r == nil {
		col.log.Warn("rmqprom: an earlier backlog read is still running; no backlog gauges in this scrape")
		return
	}
	timer := time.NewTimer(time.Until(r.deadline))
	defer timer.Stop()
	late := false
	select {
	case <-r.done:
	case <-timer.C:
		late = true
	}
	if late || r.wasCut() {
		col.log.Warn("rmqprom: reading backlogs took longer than the timeout; the rest are left out of this scrape", "timeout", col.timeout)
	}
	d := &col.d
	for _, ts := range r.snapshot() {
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
	}
}
