package rmqweb

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/rmq-go/rmq"
)

// topicsPage lists every topic of the namespace.
type topicsPage struct {
	page
	Topics []topicSummary
}

// topicSummary is one topic's line on the topics page (and the head of its
// own page).
type topicSummary struct {
	rmq.Topic
	Backlog    rmq.Backlog
	BacklogErr string
	Traffic    traffic
	// Flow is the topic's pause and rate limit; FlowKnown is false when
	// they could not be read.
	Flow      rmq.FlowControl
	FlowKnown bool
	// Breakers is where the topic's breaker is open or half-open now.
	Breakers breakerStates
}

// breakerStates is where a topic's breaker is not closed now: each process
// keeps its own breaker and shares its state in Redis (Client.OpenBreakers).
type breakerStates struct {
	Known          bool // read from Redis
	Open, HalfOpen int  // processes whose breaker is open, half-open
	Processes      []rmq.ProcessBreaker
}

// newBreakerStates counts the processes by state.
func newBreakerStates(ps []rmq.ProcessBreaker) breakerStates {
	bs := breakerStates{Known: true, Processes: ps}
	for _, p := range ps {
		switch p.State {
		case rmq.BreakerOpen:
			bs.Open++
		case rmq.BreakerHalfOpen:
			bs.HalfOpen++
		}
	}
	return bs
}

// traffic is what every process of the namespace reported for a topic over
// the last minutes.
type traffic struct {
	Known     bool    // the shared metrics were read
	PerSecond float64 // deliveries per second over the last full minute (or the current one)
	Chart     barChart
	// Lateness percentiles over the minutes shown; Late is false without
	// observations (no first delivery of a time topic in that time).
	Late          bool
	P50, P90, P99 time.Duration
	// BreakerOpened and HeldBack sum what every process's flow control did
	// over the minutes shown: breaker openings, and slot turns held back by
	// reason (pause, limit, breaker).
	BreakerOpened int64
	HeldBack      map[string]int64
}

// topicsPage serves the topics page.
func (s *server) topicsPage(w http.ResponseWriter, r *http.Request) {
	p := topicsPage{page: s.page(w, r, "topics")}
	p.Notice = notice(r)
	ctx := r.Context()
	topics, unreadable, err := s.topics(ctx)
	if err != nil {
		p.Errors = append(p.Errors, s.readFailed("the topics", err))
		s.render(w, r, http.StatusInternalServerError, "topics", p)
		return
	}
	p.Errors = append(p.Errors, unreadable...)
	flows, flowErr := s.flows(ctx)
	if flowErr != "" {
		p.Errors = append(p.Errors, flowErr)
	}
	for _, t := range topics {
		sum, errs := s.summary(ctx, t, flows)
		p.Topics = append(p.Topics, sum)
		p.Errors = append(p.Errors, errs...)
	}
	s.render(w, r, http.StatusOK, "topics", p)
}

// flows reads every topic's pause and rate limit; nil and the error's line
// when that fails.
func (s *server) flows(ctx context.Context) (map[string]rmq.FlowControl, string) {
	f, err := s.c.FlowControls(ctx)
	if err != nil {
		return nil, s.readFailed("the flow control", err)
	}
	return f, ""
}

// summary reads a topic's backlog, breaker states and traffic (flows: every
// topic's flow control, nil if unread); what fails is reported and left
// blank.
func (s *server) summary(ctx context.Context, t rmq.Topic, flows map[string]rmq.FlowControl) (topicSummary, []string) {
	sum := topicSummary{Topic: t, Flow: flows[t.Name], FlowKnown: flows != nil}
	var errs []string
	b, err := s.c.Backlog(ctx, t.Name)
	if err != nil {
		sum.BacklogErr = "unreadable"
		errs = append(errs, s.readFailed(fmt.Sprintf("the backlog of %q", t.Name), err))
	}
	sum.Backlog = b
	if open, err := s.c.OpenBreakers(ctx, t.Name); err != nil {
		errs = append(errs, s.readFailed(fmt.Sprintf("the breaker states of %q", t.Name), err))
	} else {
		sum.Breakers = newBreakerStates(open)
	}
	_, minutes, err := s.c.NamespaceMetrics(ctx, t.Name, s.opts.Minutes)
	if err != nil {
		errs = append(errs, s.readFailed(fmt.Sprintf("the metrics of %q", t.Name), err))
		return sum, errs
	}
	sum.Traffic = newTraffic(minutes, time.Now())
	return sum, errs
}

// newTraffic sums per-minute metrics (oldest first, the current minute
// last) into rates, a chart of deliveries per second and lateness
// percentiles.
func newTraffic(minutes []rmq.MinuteMetrics, now time.Time) traffic {
	tr := traffic{Known: true, HeldBack: make(map[string]int64)}
	values := make([]float64, len(minutes))
	titles := make([]string, len(minutes))
	var late rmq.Histogram
	for i, m := range minutes {
		secs := 60.0
		if i == len(minutes)-1 { // the current minute, so far
			secs = max(now.Sub(m.Minute).Seconds(), 1)
		}
		values[i] = float64(m.Delivered) / secs
		titles[i] = fmt.Sprintf("%s UTC: %s delivered/s, %s sent, %s failed", m.Minute.UTC().Format("15:04"),
			rate(values[i]), count(m.Sent), count(m.Failed))
		late = addHistogram(late, m.Lateness)
		tr.BreakerOpened += m.BreakerOpened
		for r, n := range m.HeldBack {
			tr.HeldBack[r] += n
		}
	}
	switch n := len(values); {
	case n >= 2 && now.Sub(minutes[n-1].Minute) < 10*time.Second:
		tr.PerSecond = values[n-2] // the current minute has barely begun
	case n >= 1:
		tr.PerSecond = values[n-1]
	}
	peak := 0.0
	for _, v := range values {
		peak = max(peak, v)
	}
	tr.Chart = newBarChart(values, titles, rate(peak)+"/s")
	if late.Count > 0 {
		tr.Late = true
		tr.P50, tr.P90, tr.P99 = late.Quantile(0.5), late.Quantile(0.9), late.Quantile(0.99)
	}
	return tr
}

// addHistogram returns the bucket-wise sum of a and b (same bounds).
func addHistogram(a, b rmq.Histogram) rmq.Histogram {
	if a.Counts == nil {
		a = rmq.Histogram{Bounds: b.Bounds, Counts: make([]uint64, len(b.Counts))}
	}
	for i := range min(len(a.Counts), len(b.Counts)) {
		a.Counts[i] += b.Counts[i]
	}
	a.Count += b.Count
	a.Sum += b.Sum
	return a
}
