package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/rmq-go/rmq"
)

// latenessMinutes is the recent window of "rmq stats"'s lateness line.
const latenessMinutes = 5

// setupStats defines "rmq stats TOPIC".
func setupStats(fs *flag.FlagSet) runFunc {
	af := addAdminFlags(fs)
	all := fs.Bool("all", false, "list every slot, not only the non-empty ones")
	return af.topicCommand(func(ctx context.Context, e *env, c *rmq.Client, topic string) error {
		st, err := c.Stats(ctx, topic)
		if err != nil {
			return err
		}
		b, err := c.Backlog(ctx, topic)
		if err != nil {
			return err
		}
		total, minutes, err := c.NamespaceMetrics(ctx, topic, latenessMinutes)
		if err != nil {
			return err
		}
		printStats(e.out, c.Namespace(), st, b, total, minutes, *all)
		return nil
	})
}

// printStats prints the totals of st, the oldest due age of b, the
// lateness percentiles of the namespace's metrics and a table of the slots
// of st (the non-empty ones unless all).
func printStats(p *printer, namespace string, st rmq.Stats, b rmq.Backlog, total rmq.TopicMetrics, minutes []rmq.MinuteMetrics, all bool) {
	p.printf("topic %s (namespace %s, %d slots)\n", st.Topic, namespace, len(st.Slots))
	state := "consuming"
	if st.Paused {
		state = "PAUSED"
	}
	p.printf("%s; rate limit %s\n", state, st.RateLimit)
	p.table(nil, [][]string{
		{"store", itoa(st.Store), "waiting to be due, or due and not yet popped"},
		{"retry", itoa(st.Retry), "failed, waiting out a retry backoff"},
		{"prepare", itoa(st.Prepare), "handed to a consumer, not yet settled"},
		{"dead", itoa(st.Dead), "out of retries"},
	})
	p.printf("\n")
	printLateness(p, st.Type, b, total, minutes)
	var rows [][]string
	for _, s := range st.Slots {
		if all || s.Store+s.Retry+s.Prepare+s.Dead > 0 {
			rows = append(rows, []string{itoa(int64(s.Slot)), itoa(s.Store), itoa(s.Retry), itoa(s.Prepare), itoa(s.Dead)})
		}
	}
	p.printf("\n")
	if len(rows) == 0 {
		p.printf("every slot is empty\n")
		return
	}
	p.table([]string{"SLOT", "STORE", "RETRY", "PREPARE", "DEAD"}, rows)
}

// printLateness prints the oldest due age and the lateness percentiles of
// the last minutes and of all time.
func printLateness(p *printer, typ rmq.TopicType, b rmq.Backlog, total rmq.TopicMetrics, minutes []rmq.MinuteMetrics) {
	if typ == rmq.Priority {
		p.printf("oldest due: not measured (a Priority topic's messages are due at once)\n")
		p.printf("lateness: not measured (Priority topics have no due times)\n")
		return
	}
	if b.OldestDueAge > 0 {
		p.printf("oldest due: %s (how long the earliest due message in store has waited)\n", latency(b.OldestDueAge))
	} else {
		p.printf("oldest due: none (no message in store is due)\n")
	}
	var recent rmq.Histogram
	for _, m := range minutes {
		recent = sumHistograms(recent, m.Lateness)
	}
	p.printf("lateness (listener start minus due time, first deliveries, every process):\n")
	row := func(name string, h rmq.Histogram) []string {
		if h.Count == 0 {
			return []string{name, "-", "-", "-", "0"}
		}
		return []string{name, latency(h.Quantile(0.5)), latency(h.Quantile(0.9)), latency(h.Quantile(0.99)), itoa(int64(h.Count))}
	}
	p.table([]string{"", "P50", "P90", "P99", "FIRST DELIVERIES"}, [][]string{
		row(fmt.Sprintf("last %d min", latenessMinutes), recent),
		row("all time", total.Lateness),
	})
}

// sumHistograms returns the bucket-wise sum of a and b (same bounds).
func sumHistograms(a, b rmq.Histogram) rmq.Histogram {
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

// latency formats a lateness: "0.8 ms" below a second, "2.50 s" below a
// minute, then "3m20s".
func latency(d time.Duration) string {
	switch {
	case d < time.Second:
		return millis(d)
	case d < time.Minute:
		return fmt.Sprintf("%.2f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}
