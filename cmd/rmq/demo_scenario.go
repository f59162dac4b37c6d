package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/rmq-go/rmq"
)

// Topics of the demo, one of each type.
const (
	jobsTopic     = "demo.jobs"      // Priority: GPU jobs, key accounts first
	renderTopic   = "demo.render"    // RangeMerge: one image render per burst of price changes
	reminderTopic = "demo.reminders" // FixedTime: close an unpaid order at a set time
)

// demoTopics are the topics the demo defines.
var demoTopics = []rmq.Topic{
	{Name: jobsTopic, SlotAmount: 4, Type: rmq.Priority},
	{Name: renderTopic, SlotAmount: 4, Type: rmq.RangeMerge},
	{Name: reminderTopic, SlotAmount: 4, Type: rmq.FixedTime},
}

// Contents and timings of the scenario.
const (
	warmupJob      = "job:warmup" // keeps the jobs consumer busy while the others arrive
	warmupPriority = 50
	busyFor        = 300 * time.Millisecond // at least
	jobBasis       = "gpu-farm"             // every job's slot basis: one slot, so one priority order

	mergedSKU   = "sku:42" // sent mergeSends times inside mergeWindow
	mergeSends  = 5
	mergeGap    = 150 * time.Millisecond
	mergeWindow = 1500 * time.Millisecond

	flakySKU      = "sku:13" // fails flakyFailures times, then renders
	flakyFailures = 2
	poisonSKU     = "sku:666" // always fails, so it ends in the dead set
	failWindow    = 100 * time.Millisecond
	retryWait     = 50 * time.Millisecond // the backoff before every retry

	reminder      = "order:1001:close-if-unpaid"
	reminderAhead = 5 * time.Second
)

// demoJobs are the jobs sent while the consumer is busy, lowest priority first.
var demoJobs = []struct {
	content  string
	priority int64
}{{"job:free-user", 100}, {"job:pro-user", 500}, {"job:key-account", 900}}

// scenario is one run of the demo: its listeners record what they see in the
// tally, and play waits on the tally to move from step to step.
type scenario struct {
	c     *rmq.Client
	p     *printer
	tally tally
}

// newScenario returns a scenario on c that prints to p.
func newScenario(c *rmq.Client, p *printer) *scenario {
	return &scenario{c: c, p: p, tally: tally{changed: make(chan struct{}), renders: make(map[string]int)}}
}

// setup defines the demo's topics and subscribes its listeners.
func (s *scenario) setup(ctx context.Context) error {
	for _, t := range demoTopics {
		if err := s.c.DefineTopic(ctx, t); err != nil {
			return err
		}
	}
	listeners := map[string]rmq.ListenerFunc{jobsTopic: s.onJob, renderTopic: s.onRender, reminderTopic: s.onReminder}
	for _, t := range demoTopics {
		if err := s.c.Subscribe(t.Name, listeners[t.Name]); err != nil {
			return err
		}
		s.p.printf("topic %-15s %-10s %d slots\n", t.Name, t.Type, t.SlotAmount)
	}
	return nil
}

// play runs the scenario on the started client and returns once every
// expected event has happened and the queues are drained. Once it returns,
// the listeners wait for nothing more from it.
func (s *scenario) play(ctx context.Context) error {
	defer s.tally.update(func() { s.tally.ended = true })
	for _, step := range []func(context.Context) error{s.sendReminder, s.playPriorities, s.playMerge, s.playFailures} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	if err := s.tally.await(ctx, "the reminder", func() bool { return s.tally.reminded }); err != nil {
		return err
	}
	return s.awaitDrained(ctx)
}

// sendReminder sends the FixedTime message, due reminderAhead from now.
func (s *scenario) sendReminder(ctx context.Context) error {
	due := time.Now().Add(reminderAhead)
	s.tally.update(func() { s.tally.reminderDue = due })
	s.p.event("send", reminderTopic, "%s due %s (%s)", formatContent([]byte(reminder)), clock(due), s.p.elapsed(due))
	return s.c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: reminderTopic, Content: []byte(reminder), FixedTime: due})
}

// playPriorities keeps the jobs consumer busy, sends jobs lowest priority
// first meanwhile, and waits until all are consumed.
func (s *scenario) playPriorities(ctx context.Context) error {
	send := func(content string, priority int64) error {
		s.p.event("send", jobsTopic, "%s priority %d", formatContent([]byte(content)), priority)
		return s.c.Producer().Send(ctx, rmq.PriorityMessage{Topic: jobsTopic, Content: []byte(content),
			Priority: priority, SlotBasis: jobBasis})
	}
	if err := send(warmupJob, warmupPriority); err != nil {
		return err
	}
	if err := s.tally.await(ctx, "the warm-up job", func() bool { return s.tally.busy }); err != nil {
		return err
	}
	for _, j := range demoJobs {
		if err := send(j.content, j.priority); err != nil {
			return err
		}
	}
	s.tally.update(func() { s.tally.jobsSent = true })
	return s.tally.await(ctx, "the jobs", func() bool { return len(s.tally.priorities) == len(demoJobs) })
}

// playMerge sends mergeSends price changes of one product inside the merge
// window and waits for its render.
func (s *scenario) playMerge(ctx context.Context) error {
	for i := 1; i <= mergeSends; i++ {
		if i > 1 {
			if err := sleep(ctx, mergeGap); err != nil {
				return err
			}
		}
		s.p.event("send", renderTopic, "%s price change %d/%d, render within %v",
			formatContent([]byte(mergedSKU)), i, mergeSends, mergeWindow)
		err := s.c.Producer().Send(ctx, rmq.RangeMergeMessage{Topic: renderTopic, Content: []byte(mergedSKU), TimeRange: mergeWindow})
		if err != nil {
			return err
		}
	}
	return s.tally.await(ctx, "the merged render", func() bool { return s.tally.renders[mergedSKU] > 0 })
}

// playFailures sends a flaky and a poison render and waits until the first
// succeeds and the second is in the dead set.
func (s *scenario) playFailures(ctx context.Context) error {
	for _, content := range []string{flakySKU, poisonSKU} {
		s.p.event("send", renderTopic, "%s render within %v", formatContent([]byte(content)), failWindow)
		err := s.c.Producer().Send(ctx, rmq.RangeMergeMessage{Topic: renderTopic, Content: []byte(content), TimeRange: failWindow})
		if err != nil {
			return err
		}
	}
	err := s.tally.await(ctx, "the failing renders", func() bool { return s.tally.flakyDone && s.tally.poisonLast })
	if err != nil {
		return err
	}
	for {
		dead, err := s.c.DeadMessages(ctx, renderTopic, 0)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(dead, func(d rmq.DeadMessage) bool { return string(d.Content) == poisonSKU }) {
			var n int
			s.tally.read(func() { n = s.tally.renders[poisonSKU] })
			s.p.event("dead", renderTopic, "%s is in the dead set after %d deliveries", formatContent([]byte(poisonSKU)), n)
			return nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the dead set: %w", context.Cause(ctx))
		}
	}
}

// awaitDrained waits until no demo topic has messages pending or in flight.
func (s *scenario) awaitDrained(ctx context.Context) error {
	for {
		busy := false
		for _, t := range demoTopics {
			st, err := s.c.Stats(ctx, t.Name)
			if err != nil {
				return err
			}
			busy = busy || st.Store+st.Prepare > 0
		}
		if !busy {
			return nil
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			return fmt.Errorf("waiting for the queues to drain: %w", context.Cause(ctx))
		}
	}
}

// summarize prints what the scenario showed, one line per feature.
func (s *scenario) summarize() {
	s.tally.read(func() {
		t := &s.tally
		sent := make([]int64, len(demoJobs))
		for i, j := range demoJobs {
			sent[i] = j.priority
		}
		s.p.printf("\nsummary:\n")
		s.p.table(nil, [][]string{
			{"  merge", fmt.Sprintf("%s sent %d times, delivered %s", formatContent([]byte(mergedSKU)), mergeSends, plural(int64(t.renders[mergedSKU]), "time"))},
			{"  priority", fmt.Sprintf("sent %s while the consumer was busy; consumed %s", joinInts(sent), joinInts(t.priorities))},
			{"  fixed time", fmt.Sprintf("%s due %s, delivered %s late", formatContent([]byte(reminder)), clock(t.reminderDue), millis(t.late))},
			{"  retries", fmt.Sprintf("%s succeeded on attempt %d", formatContent([]byte(flakySKU)), t.renders[flakySKU])},
			{"  dead", fmt.Sprintf("%s dead after %d deliveries", formatContent([]byte(poisonSKU)), t.renders[poisonSKU])},
		})
	})
}

// sleep waits for d, or returns ctx.Err() if ctx ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
