package rmq

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"
)

// MessageListener handles messages of a subscribed topic.
type MessageListener interface {
	// OnMessage handles m. Returning nil commits it; returning an error (or
	// panicking) rolls it back for a retry, or to the dead set when no retries
	// are left; returning ErrNotOwner (see Owned) hands it back unchanged, no
	// retry spent, with the rest of its batch (returned while the worker
	// still owns the slot, the slot then pops nothing for a second, so that
	// they are not delivered again at once, endlessly). ctx carries a
	// deadline at the consume timeout (after it the message may be
	// delivered again; see WithConsumeTimeout), and is
	// cancelled when consumption is abandoned (Shutdown or Close whose
	// context ended) or the slot is lost. m.Content must not be modified.
	OnMessage(ctx context.Context, m *Message) error
}

// ListenerFunc adapts a function to MessageListener.
type ListenerFunc func(ctx context.Context, m *Message) error

// OnMessage calls f.
func (f ListenerFunc) OnMessage(ctx context.Context, m *Message) error { return f(ctx, m) }

// SubscribeOption configures one subscription.
type SubscribeOption func(*subConfig)

type subConfig struct {
	threads   int
	lookahead time.Duration
	breaker   *Breaker // nil: none
	errs      []error
}

// WithThreads sets how many goroutines of this process consume the topic.
// Each slot is consumed by one thread at a time and each thread handles one
// message at a time, so threads bound the topic's concurrency here. On Linux
// each thread holds a file descriptor (a timerfd, its sleep) while the client
// runs; without one to spare it sleeps on a runtime timer. Default 1; at most
// MaxSlotAmount.
func WithThreads(n int) SubscribeOption {
	return func(c *subConfig) {
		if n < 1 || n > MaxSlotAmount {
			c.errs = append(c.errs, fmt.Errorf("%w: threads %d outside 1..%d", ErrInvalidOption, n, MaxSlotAmount))
			return
		}
		c.threads = n
	}
}

// subscription is one subscribed topic of a client.
type subscription struct {
	c        *Client
	topic    *topicInfo
	listener MessageListener
	threads  []*thread
	holders  []atomic.Pointer[thread] // per slot: the thread holding it, if any
	owned    atomic.Int32             // slots held (non-nil holders)
	stats    listenStats
	flow     flow
	// lookahead: pops also take messages due this soon (WithLookahead).
	lookahead time.Duration
}

// Subscribe registers listener for topic; consumption begins at Start. The
// topic must be defined (ErrUnknownTopic otherwise). Subscribe must come
// before Start (ErrStarted after it, ErrClosed once consumption ended), once
// per topic. Nil options are skipped.
func (c *Client) Subscribe(topic string, listener MessageListener, opts ...SubscribeOption) error {
	if nilListener(listener) {
		return fmt.Errorf("%w for topic %q", ErrNilListener, topic)
	}
	def := DefaultBreaker
	sc := subConfig{threads: 1, breaker: &def}
	for _, o := range opts {
		if o != nil {
			o(&sc)
		}
	}
	if len(sc.errs) > 0 {
		return fmt.Errorf("subscribe %q: %w", topic, sc.errs[0])
	}
	c.mu.Lock()
	state := c.state
	c.mu.Unlock()
	switch state {
	case stateStopped, stateClosed:
		return ErrClosed // before any Redis read: the caller may have closed its Redis client
	case stateStarted:
		return fmt.Errorf("%w: subscribe %q", ErrStarted, topic)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	t, err := c.lookupTopic(ctx, topic)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.state == stateStopped || c.state == stateClosed:
		return ErrClosed
	case c.state != stateNew:
		return fmt.Errorf("%w: subscribe %q", ErrStarted, topic)
	case c.subs[topic] != nil:
		return fmt.Errorf("%w: %q", ErrAlreadySubscribed, topic)
	}
	if sc.lookahead > 0 && t.Type == Priority {
		return fmt.Errorf("subscribe %q: %w: lookahead on a Priority topic (its messages have no due time)", topic, ErrInvalidOption)
	}
	s := &subscription{c: c, topic: t, listener: listener, holders: make([]atomic.Pointer[thread], t.SlotAmount),
		lookahead: sc.lookahead}
	if sc.breaker != nil {
		s.flow.breaker = newBreaker(*sc.breaker, topic, c.cfg.logger, c.cfg.consumeTimeout+time.Second)
	}
	for i := range sc.threads {
		s.threads = append(s.threads, newThread(s, i))
	}
	c.subs[topic] = s
	return nil
}

// nilListener reports whether l is nil, or a nil func or pointer behind the
// interface (an unset ListenerFunc, a nil *T), whose every call would panic
// and send each message of the topic to the dead set. A nil map or slice
// type may well serve (its methods range over it), and is taken.
func nilListener(l MessageListener) bool {
	if l == nil {
		return true
	}
	switch v := reflect.ValueOf(l); v.Kind() {
	case reflect.Func, reflect.Pointer:
		return v.IsNil()
	}
	return false
}
