package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rmq-go/rmq"
)

// onJob handles the Priority topic. The warm-up job keeps the consumer busy
// until the other jobs are sent (and for at least busyFor), so they wait in
// store together and are taken by priority. If the scenario ends first (cut
// short), the job fails and is retried, and the consumer is free to stop.
func (s *scenario) onJob(ctx context.Context, m *rmq.Message) error {
	if string(m.Content) == warmupJob {
		s.p.event("busy", m.Topic, "%s priority %d holds the consumer while the other jobs arrive",
			formatContent(m.Content), m.Priority)
		s.tally.update(func() { s.tally.busy = true })
		if err := sleep(ctx, busyFor); err != nil {
			return err
		}
		sent := false
		if err := s.tally.await(ctx, "the other jobs", func() bool {
			sent = s.tally.jobsSent
			return sent || s.tally.ended
		}); err != nil {
			return err
		}
		if !sent {
			return errors.New("the scenario ended before the other jobs were sent")
		}
		s.p.event("ok", m.Topic, "%s done", formatContent(m.Content))
		return nil
	}
	s.p.event("ok", m.Topic, "%s priority %d", formatContent(m.Content), m.Priority)
	s.tally.update(func() { s.tally.priorities = append(s.tally.priorities, m.Priority) })
	return nil
}

// onRender handles the RangeMerge topic: the poison content always fails, the
// flaky one fails flakyFailures times, the others render.
func (s *scenario) onRender(_ context.Context, m *rmq.Message) error {
	content := string(m.Content)
	s.tally.update(func() { s.tally.renders[content]++ })
	var err error
	switch {
	case content == poisonSKU:
		err = errors.New("corrupt source image")
	case content == flakySKU && m.Attempt <= flakyFailures:
		err = errors.New("GPU busy")
	}
	if err != nil {
		next := fmt.Sprintf("retry in %v", retryWait)
		if m.RetriesLeft == 0 {
			next = "no retries left: to the dead set"
		}
		s.p.event("fail", m.Topic, "%s attempt %d, RetriesLeft %d: %v; %s",
			formatContent(m.Content), m.Attempt, m.RetriesLeft, err, next)
		if content == poisonSKU && m.RetriesLeft == 0 {
			s.tally.update(func() { s.tally.poisonLast = true })
		}
		return err
	}
	switch content {
	case mergedSKU:
		s.p.event("ok", m.Topic, "%s rendered once for %d price changes, due %v after the first (%s)",
			formatContent(m.Content), mergeSends, mergeWindow, s.p.elapsed(m.Due))
	default:
		s.p.event("ok", m.Topic, "%s rendered on attempt %d", formatContent(m.Content), m.Attempt)
	}
	if content == flakySKU {
		s.tally.update(func() { s.tally.flakyDone = true })
	}
	return nil
}

// onReminder handles the FixedTime topic and measures how late it came.
func (s *scenario) onReminder(_ context.Context, m *rmq.Message) error {
	now := time.Now()
	var due time.Time
	s.tally.update(func() {
		due = s.tally.reminderDue
		s.tally.late, s.tally.reminded = now.Sub(due), true
	})
	s.p.event("ok", m.Topic, "%s due %s, delivered %s late", formatContent(m.Content), clock(due), millis(now.Sub(due)))
	return nil
}
