package rmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/rdb"
)

// TopicType says how a topic orders and merges its messages.
type TopicType int

const (
	// RangeMerge delays each message by its TimeRange; copies of one content
	// sent while it waits merge into one, keeping the first due time.
	RangeMerge TopicType = iota + 1
	// Priority delivers the highest priority first; a copy sent while one
	// waits merges into it and its priority replaces the old one.
	Priority
	// FixedTime delivers each message at its FixedTime; a copy sent while one
	// waits merges into it and its time replaces the old one.
	FixedTime
)

// Limits of topic definitions.
const (
	// MaxSlotAmount is the largest SlotAmount a topic may have.
	MaxSlotAmount = 1 << 16
	// MaxNameLength is the longest topic name or namespace, in bytes.
	MaxNameLength = 100
)

// String returns "RangeMerge", "Priority" or "FixedTime".
func (t TopicType) String() string {
	switch t {
	case RangeMerge:
		return "RangeMerge"
	case Priority:
		return "Priority"
	case FixedTime:
		return "FixedTime"
	}
	return fmt.Sprintf("TopicType(%d)", int(t))
}

// MarshalText implements encoding.TextMarshaler.
func (t TopicType) MarshalText() ([]byte, error) {
	if !t.valid() {
		return nil, fmt.Errorf("%w: %d", ErrInvalidTopicType, int(t))
	}
	return []byte(t.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *TopicType) UnmarshalText(b []byte) error {
	for _, c := range []TopicType{RangeMerge, Priority, FixedTime} {
		if c.String() == string(b) {
			*t = c
			return nil
		}
	}
	return fmt.Errorf("%w: %q", ErrInvalidTopicType, b)
}

func (t TopicType) valid() bool { return t >= RangeMerge && t <= FixedTime }

// Topic defines a topic. Two definitions of one name must agree on
// SlotAmount and Type.
type Topic struct {
	Name       string    `json:"-"`
	SlotAmount int       `json:"slotAmount"` // a power of two, 1..MaxSlotAmount
	Type       TopicType `json:"type"`
}

// Validate reports the first problem of the definition, or nil.
func (t Topic) Validate() error {
	if err := checkName(t.Name); err != nil {
		return fmt.Errorf("%w %q: %v", ErrInvalidTopic, t.Name, err)
	}
	if t.SlotAmount < 1 || t.SlotAmount > MaxSlotAmount || t.SlotAmount&(t.SlotAmount-1) != 0 {
		return fmt.Errorf("%w in [1, %d], topic %q has %d", ErrSlotAmount, MaxSlotAmount, t.Name, t.SlotAmount)
	}
	if !t.Type.valid() {
		return fmt.Errorf("%w %d for topic %q", ErrInvalidTopicType, int(t.Type), t.Name)
	}
	return nil
}

// checkName accepts 1..MaxNameLength bytes of [A-Za-z0-9._-], but not "."
// or "..", which a ZooKeeper path cannot hold as a component.
func checkName(s string) error {
	if s == "" {
		return fmt.Errorf("empty")
	}
	if s == "." || s == ".." {
		return fmt.Errorf("%q is not a name", s)
	}
	if len(s) > MaxNameLength {
		return fmt.Errorf("longer than %d bytes", MaxNameLength)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("character %q at %d is not one of [A-Za-z0-9._-]", c, i)
		}
	}
	return nil
}

// encodeTopic is the JSON stored in Redis (and ZooKeeper) for t.
func encodeTopic(t Topic) string {
	b, _ := json.Marshal(t) // cannot fail: t is validated
	return string(b)
}

// decodeTopic parses a stored definition of name.
func decodeTopic(name, def string) (Topic, error) {
	t := Topic{Name: name}
	if err := json.Unmarshal([]byte(def), &t); err != nil {
		return Topic{}, fmt.Errorf("%w: topic %q: stored definition %q: %w", ErrUnreadableTopic, name, def, err)
	}
	if err := t.Validate(); err != nil {
		return Topic{}, fmt.Errorf("%w: topic %q: stored definition %q: %w", ErrUnreadableTopic, name, def, err)
	}
	return t, nil
}

// topicInfo is a defined topic with its keys computed once.
type topicInfo struct {
	Topic
	slots   []rdb.SlotKeys
	wake    string
	metrics *topicMetrics
}

// topicCache remembers topics known to be defined. Definitions never change
// while a topic lives; a topic deleted and defined again under its name may
// have another (this client learns it when it defines the topic, deletes
// it, or after DeleteTopic dropped it, looks it up again; its admin calls
// and Topics read the definition every time: loadTopic). A topic's
// metrics outlive its entries: they count since New, whatever became of the
// definition.
type topicCache struct {
	mu      sync.RWMutex
	byName  map[string]*topicInfo
	metrics map[string]*topicMetrics
}

func (c *topicCache) get(name string) *topicInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byName[name]
}

// drop forgets the entry of name, a topic deleted, and keeps a compact
// copy of its metrics (topicMetrics.retire).
func (c *topicCache) drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.byName, name)
	if m := c.metrics[name]; m != nil && !m.retired {
		c.metrics[name] = m.retire()
	}
}

// put returns the entry of t: the cached one if it agrees with t, else a
// new one in its place.
func (c *topicCache) put(keys rdb.Keyspace, t Topic) *topicInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ti := c.byName[t.Name]; ti != nil && ti.Topic == t {
		return ti
	}
	if c.byName == nil {
		c.byName = make(map[string]*topicInfo)
		c.metrics = make(map[string]*topicMetrics)
	}
	m := c.metrics[t.Name]
	switch {
	case m == nil:
		m = newTopicMetrics()
		c.metrics[t.Name] = m
	case m.retired: // defined again: counting on from the deleted one's figures
		m = m.revive()
		c.metrics[t.Name] = m
	}
	ti := &topicInfo{Topic: t, slots: keys.Slots(t.Name, t.SlotAmount), wake: keys.WakeChannel(t.Name), metrics: m}
	c.byName[t.Name] = ti
	return ti
}

// DefineTopic records t in Redis (and in the coordinator, when it keeps topic
// definitions). Defining an existing topic again with the same SlotAmount and
// Type is a no-op; a different definition fails with ErrTopicConflict and
// changes nothing.
func (c *Client) DefineTopic(ctx context.Context, t Topic) error {
	if ctx == nil {
		return ErrNilContext
	}
	if err := c.checkOpen(); err != nil {
		return err
	}
	if err := t.Validate(); err != nil {
		return err
	}
	def := encodeTopic(t)
	stored, created, err := c.broker.SaveTopic(ctx, t.Name, def)
	if err != nil {
		return fmt.Errorf("rmq: define topic %q: %w", t.Name, err)
	}
	if stored != def {
		old, err := decodeTopic(t.Name, stored)
		if err != nil {
			return err
		}
		if old.SlotAmount != t.SlotAmount || old.Type != t.Type {
			return fmt.Errorf("%w: %q is %s with %d slots, not %s with %d", ErrTopicConflict,
				t.Name, old.Type, old.SlotAmount, t.Type, t.SlotAmount)
		}
	}
	if r, ok := c.cfg.coordinator.(coordinator.TopicRecorder); ok {
		if err := r.RecordTopic(ctx, c.cfg.namespace, t.Name, def); err != nil {
			err = fmt.Errorf("rmq: topic %q in coordinator: %w", t.Name, err)
			if created && errors.Is(err, ErrTopicConflict) {
				// The coordinator holds another definition: the one this
				// call wrote to Redis goes again (not one written since).
				if uerr := c.broker.UnsaveTopic(context.WithoutCancel(ctx), t.Name, def); uerr != nil {
					return fmt.Errorf("%w; and its definition stays in Redis: %v", err, uerr)
				}
			}
			return err
		}
	}
	c.topics.put(c.keys, t)
	return nil
}

// lookupTopic returns a defined topic, from the cache or from Redis.
func (c *Client) lookupTopic(ctx context.Context, name string) (*topicInfo, error) {
	if ti := c.topics.get(name); ti != nil {
		return ti, nil
	}
	return c.loadTopic(ctx, name)
}

// loadTopic returns a defined topic as Redis holds it now, and caches it.
// The admin calls that read or change a topic's slots (Stats, the
// dead-letter calls, NextDue, Owners) use it, so that a topic another
// process deleted and defined again with another slot amount is read and
// changed as it is, not as this client first knew it: one read more per
// call. Send, Subscribe and Backlog use the cache (lookupTopic).
func (c *Client) loadTopic(ctx context.Context, name string) (*topicInfo, error) {
	if err := checkName(name); err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrInvalidTopic, name, err)
	}
	def, found, err := c.broker.LoadTopic(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("rmq: load topic %q: %w", name, err)
	}
	if !found {
		return nil, fmt.Errorf("%w %q in namespace %q", ErrUnknownTopic, name, c.keys.Namespace())
	}
	t, err := decodeTopic(name, def)
	if err != nil {
		return nil, err
	}
	return c.learnTopic(t), nil
}

// learnTopic caches t as Redis holds it now. A definition that differs from
// the cached one (the topic deleted and defined again by another process)
// replaces it, and the backlog read under the old one is dropped.
func (c *Client) learnTopic(t Topic) *topicInfo {
	if old := c.topics.get(t.Name); old != nil && old.Topic != t {
		defer c.backlogs.forget(t.Name)
	}
	return c.topics.put(c.keys, t)
}

// Topics returns every topic defined in the client's namespace, by name. A
// definition it cannot read (ErrUnreadableTopic: written by a newer version,
// or damaged) is left out, and the error names it: the topics it could read
// are returned with that error, so a caller may show them and the error.
func (c *Client) Topics(ctx context.Context) ([]Topic, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	defs, err := c.broker.LoadTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("rmq: load topics: %w", err)
	}
	out := make([]Topic, 0, len(defs))
	var unreadable []error
	for name, def := range defs {
		t, err := decodeTopic(name, def)
		if err != nil {
			unreadable = append(unreadable, err)
			continue
		}
		if c.topics.get(name) != nil {
			c.learnTopic(t) // another process may have defined it again
		}
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Topic) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(unreadable, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return out, errors.Join(unreadable...)
}
