package rmq

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/rmq-go/rmq/coordinator"
)

// DeleteOption changes what DeleteTopic does.
type DeleteOption func(*deleteConfig)

type deleteConfig struct{ force bool }

// Force makes DeleteTopic delete a topic that still holds messages, with
// all of them (pending, in retry, in prepare and dead).
func Force() DeleteOption { return func(c *deleteConfig) { c.force = true } }

// DeleteTopic removes topic: its definition, its flow control, every key of
// every slot (the names are known: no SCAN), its shared metrics, and the
// coordinator's records of it. It refuses with ErrTopicNotEmpty while the
// topic holds messages, unless Force is given, and with ErrTopicInUse while
// a running process of the namespace consumes it. Producers that already
// know the topic keep its definition cached: stop sending to a topic before
// deleting it, or its slots fill again.
func (c *Client) DeleteTopic(ctx context.Context, topic string, opts ...DeleteOption) error {
	var cfg deleteConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	t, err := c.lookupTopic(ctx, topic)
	if err != nil {
		return err
	}
	users, err := c.consumersOf(ctx, t.Name)
	if err != nil {
		return err
	}
	if len(users) > 0 {
		return fmt.Errorf("%w: topic %q is consumed by %s", ErrTopicInUse, t.Name, strings.Join(users, ", "))
	}
	if !cfg.force {
		st, err := c.Stats(ctx, t.Name)
		if err != nil {
			return err
		}
		if n := st.Pending() + st.Prepare + st.Dead; n > 0 {
			return fmt.Errorf("%w: topic %q holds %d messages (store %d, retry %d, prepare %d, dead %d); rmq.Force() deletes them",
				ErrTopicNotEmpty, t.Name, n, st.Store, st.Retry, st.Prepare, st.Dead)
		}
	}
	if r, ok := c.cfg.coordinator.(coordinator.TopicRemover); ok {
		if err := r.RemoveTopic(ctx, c.cfg.namespace, t.Name); err != nil {
			return fmt.Errorf("rmq: delete topic %q in the coordinator: %w", t.Name, err)
		}
	}
	if err := c.broker.DeleteTopic(ctx, t.Name, t.SlotAmount); err != nil {
		return fmt.Errorf("rmq: delete topic %q: %w", t.Name, err)
	}
	c.topics.drop(t.Name)
	return nil
}

// consumersOf returns the running processes of the namespace that consume
// topic, as their presence entries say.
func (c *Client) consumersOf(ctx context.Context, topic string) ([]string, error) {
	present, err := c.coord.PresentWorkers(ctx)
	if err != nil {
		return nil, fmt.Errorf("rmq: presence: %w", err)
	}
	topics, err := c.broker.PresenceTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("rmq: presence: %w", err)
	}
	var out []string
	for entry := range present {
		if slices.Contains(strings.Split(topics[entry], ","), topic) {
			out = append(out, entry)
		}
	}
	slices.Sort(out)
	return out, nil
}
