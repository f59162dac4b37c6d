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

// DeleteTopic removes topic: every key of every slot (the names are known:
// no SCAN), its flow control, its shared metrics, the coordinator's records
// of it, and last its definition. It refuses with ErrTopicInUse while a
// running process of the namespace consumes it, and with ErrTopicNotEmpty
// while the topic holds messages, unless Force is given.
//
// Slots are deleted one at a time, each by one script that checks that the
// slot is empty and deletes its keys in the same step, so a message sent
// meanwhile is never deleted without Force: a slot found holding one stops
// the deletion there with ErrTopicNotEmpty, and the topic stays defined
// (the slots deleted before it were empty, so nothing is lost). Producers
// that already know the topic keep its definition cached: stop sending to a
// topic before deleting it, or a message may land in a slot already deleted
// and stay behind the deleted topic.
func (c *Client) DeleteTopic(ctx context.Context, topic string, opts ...DeleteOption) error {
	if ctx == nil {
		return ErrNilContext
	}
	if err := c.checkOpen(); err != nil {
		return err
	}
	var cfg deleteConfig
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	// The definition as stored now, not as cached: the topic may have been
	// deleted and defined again with more slots since this client read it.
	t, err := c.loadTopic(ctx, topic)
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
	for i, keys := range t.slots {
		deleted, n, err := c.broker.DeleteSlot(ctx, keys, cfg.force)
		if err != nil {
			return fmt.Errorf("rmq: delete topic %q, slot %d: %w", t.Name, i, err)
		}
		if !deleted {
			return fmt.Errorf("%w: topic %q: slot %d holds %d messages (store %d, retry %d, prepare %d, dead %d); rmq.Force() deletes them",
				ErrTopicNotEmpty, t.Name, i, n.Store+n.Retry+n.Prepare+n.Dead, n.Store, n.Retry, n.Prepare, n.Dead)
		}
	}
	// A process that began consuming the topic during the deletion keeps it
	// defined (the slots deleted so far held nothing, or Force was given;
	// it serves them afresh): the presence is read again before anything
	// of the topic's own goes.
	if users, err = c.consumersOf(ctx, t.Name); err != nil {
		return err
	}
	if len(users) > 0 {
		return fmt.Errorf("%w: topic %q began to be consumed by %s during its deletion; its slots are empty, it stays defined",
			ErrTopicInUse, t.Name, strings.Join(users, ", "))
	}
	if r, ok := c.cfg.coordinator.(coordinator.TopicRemover); ok {
		if err := r.RemoveTopic(ctx, c.cfg.namespace, t.Name); err != nil {
			return fmt.Errorf("rmq: delete topic %q in the coordinator: %w", t.Name, err)
		}
	}
	release := c.stats.hold() // no flush adds the shared metrics back meanwhile
	err = c.broker.DeleteTopic(ctx, t.Name)
	if err == nil {
		c.stats.deleted(t.Name, c.topicMetricsOf(t.Name))
	}
	release()
	if err != nil {
		return fmt.Errorf("rmq: delete topic %q: %w", t.Name, err)
	}
	c.topics.drop(t.Name)
	c.backlogs.forget(t.Name)
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
