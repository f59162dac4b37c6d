package rmq

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Flow control is stored in Redis (Keyspace.Controls: fields "<topic>|paused"
// and "<topic>|limit"), so it is cluster-wide and survives restarts; every
// consuming client reads it when it starts, every controlRefresh after, and
// at once when a change is announced on the control channel.
const controlRefresh = time.Second

// PauseTopic stops every consumer of topic in the namespace from popping
// messages, within a second (at once, unless an announcement is lost):
// listeners in hand finish, popped messages not yet started go back
// unchanged, sends go on. Messages keep their due times: after ResumeTopic
// what is overdue is delivered at once, in order. It survives restarts.
func (c *Client) PauseTopic(ctx context.Context, topic string) error {
	if ctx == nil {
		return ErrNilContext
	}
	return c.setControl(ctx, topic, "paused", "1")
}

// ResumeTopic undoes PauseTopic.
func (c *Client) ResumeTopic(ctx context.Context, topic string) error {
	if ctx == nil {
		return ErrNilContext
	}
	return c.setControl(ctx, topic, "paused", "")
}

// SetRateLimit bounds how fast topic is consumed across every process of the
// namespace (RateLimit{}: unlimited); it applies within a second. Bad limits
// fail with ErrInvalidRateLimit and change nothing.
func (c *Client) SetRateLimit(ctx context.Context, topic string, l RateLimit) error {
	if ctx == nil {
		return ErrNilContext
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("topic %q: %w", topic, err)
	}
	v := ""
	if l != (RateLimit{}) {
		v = strconv.FormatFloat(l.PerSecond, 'g', -1, 64) + "/" + strconv.Itoa(l.Burst)
	}
	return c.setControl(ctx, topic, "limit", v)
}

// setControl writes one flow control of topic, which must be defined now
// (loadTopic: not the cache, since a control of a topic another client
// deleted would outlive it and apply to one defined again under its name).
func (c *Client) setControl(ctx context.Context, topic, field, value string) error {
	if err := c.checkOpen(); err != nil {
		return err
	}
	t, err := c.loadTopic(ctx, topic)
	if err != nil {
		return err
	}
	if err := c.broker.SetControl(ctx, t.Name+"|"+field, value); err != nil {
		return fmt.Errorf("rmq: flow control of topic %q: %w", topic, err)
	}
	return nil
}

// FlowControl is a topic's pause and rate limit, as stored in Redis.
type FlowControl struct {
	Paused    bool
	RateLimit RateLimit // zero: unlimited
}

// FlowControls returns the pause and rate limit of every topic of the
// namespace that has either (one read, O(topics)); a topic left out is
// consuming without a limit.
func (c *Client) FlowControls(ctx context.Context) (map[string]FlowControl, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	controls, err := c.loadControls(ctx)
	if err != nil {
		return nil, fmt.Errorf("rmq: flow control: %w", err)
	}
	out := make(map[string]FlowControl, len(controls))
	for t, tc := range controls {
		if tc.paused || tc.limit != (RateLimit{}) {
			out[t] = FlowControl{Paused: tc.paused, RateLimit: tc.limit}
		}
	}
	return out, nil
}

// topicControl is a topic's flow control as stored.
type topicControl struct {
	paused bool
	limit  RateLimit
}

// loadControls reads every topic's flow control.
func (c *Client) loadControls(ctx context.Context) (map[string]topicControl, error) {
	fields, err := c.broker.Controls(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[string]topicControl)
	for f, v := range fields {
		topic, what, ok := strings.Cut(f, "|")
		if !ok {
			continue
		}
		tc := out[topic]
		switch what {
		case "paused":
			tc.paused = v == "1"
		case "limit":
			rate, burst, _ := strings.Cut(v, "/")
			tc.limit.PerSecond, _ = strconv.ParseFloat(rate, 64)
			tc.limit.Burst, _ = strconv.Atoi(burst)
		}
		out[topic] = tc
	}
	return out, nil
}

// flow is what holds a subscription's consumption back: the topic's pause
// and rate limit (from Redis, cluster-wide) and its breaker (this process).
type flow struct {
	known   atomic.Bool // the control was read once: until then nothing is popped
	paused  atomic.Bool
	limit   atomic.Pointer[RateLimit]
	limiter rateLimiter
	breaker *breaker // nil: disabled

	heldPause, heldLimit, heldBreaker atomic.Int64 // slot turns held back, per reason (TopicMetrics.HeldBack)
}

// controlWatcher keeps the subscriptions' flow in line with Redis.
type controlWatcher struct {
	c      *Client
	subs   map[string]*subscription
	notify chan struct{} // capacity 1: an announcement or a resubscription
}

func newControlWatcher(c *Client, subs map[string]*subscription) *controlWatcher {
	return &controlWatcher{c: c, subs: subs, notify: make(chan struct{}, 1)}
}

// poke asks for a refresh now.
func (w *controlWatcher) poke() {
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// run refreshes until ctx ends.
func (w *controlWatcher) run(ctx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		if err := w.refresh(ctx); err != nil && ctx.Err() == nil {
			if failures++; failures == 1 || failures%30 == 0 {
				w.c.cfg.logger.Warn("rmq: reading flow control failed", "failures", failures, "err", err)
			}
		} else {
			failures = 0
		}
		timer := time.NewTimer(controlRefresh)
		select {
		case <-ctx.Done():
		case <-w.notify:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// refresh reads the controls and applies them.
func (w *controlWatcher) refresh(ctx context.Context) error {
	controls, err := w.c.loadControls(ctx)
	if err != nil {
		return err
	}
	for name, s := range w.subs {
		tc := controls[name]
		f := &s.flow
		wasPaused := f.paused.Swap(tc.paused)
		first := !f.known.Swap(true)
		if tc.paused != wasPaused || first {
			w.c.cfg.logger.Info("rmq: flow control", "topic", name, "paused", tc.paused, "limit", tc.limit.String())
		}
		limit := tc.limit
		f.limit.Store(&limit)
		f.limiter.set(limit)
		if wasPaused != tc.paused || first {
			// A resume wakes every slot at once; so does a pause, for the
			// slots holding messages popped ahead to hand them back now.
			s.wakeAll()
		}
	}
	return nil
}

// share is the fraction of the topic's slots this process holds now.
func (s *subscription) share() float64 {
	return float64(s.owned.Load()) / float64(s.topic.SlotAmount)
}
