package rmq_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

func TestTopicValidate(t *testing.T) {
	cases := []struct {
		name  string
		topic rmq.Topic
		want  error
	}{
		{"ok", rmq.Topic{Name: "price.v2_x-1", SlotAmount: 64, Type: rmq.Priority}, nil},
		{"one slot", rmq.Topic{Name: "t", SlotAmount: 1, Type: rmq.FixedTime}, nil},
		{"max slots", rmq.Topic{Name: "t", SlotAmount: rmq.MaxSlotAmount, Type: rmq.RangeMerge}, nil},
		{"empty name", rmq.Topic{Name: "", SlotAmount: 8, Type: rmq.Priority}, rmq.ErrInvalidTopic},
		{"brace", rmq.Topic{Name: "a{b}", SlotAmount: 8, Type: rmq.Priority}, rmq.ErrInvalidTopic},
		{"colon", rmq.Topic{Name: "a:b", SlotAmount: 8, Type: rmq.Priority}, rmq.ErrInvalidTopic},
		{"space", rmq.Topic{Name: "a b", SlotAmount: 8, Type: rmq.Priority}, rmq.ErrInvalidTopic},
		{"too long", rmq.Topic{Name: strings.Repeat("x", rmq.MaxNameLength+1), SlotAmount: 8, Type: rmq.Priority}, rmq.ErrInvalidTopic},
		{"zero slots", rmq.Topic{Name: "t", SlotAmount: 0, Type: rmq.Priority}, rmq.ErrSlotAmount},
		{"not power of two", rmq.Topic{Name: "t", SlotAmount: 48, Type: rmq.Priority}, rmq.ErrSlotAmount},
		{"negative", rmq.Topic{Name: "t", SlotAmount: -8, Type: rmq.Priority}, rmq.ErrSlotAmount},
		{"too many", rmq.Topic{Name: "t", SlotAmount: rmq.MaxSlotAmount * 2, Type: rmq.Priority}, rmq.ErrSlotAmount},
		{"no type", rmq.Topic{Name: "t", SlotAmount: 8}, rmq.ErrInvalidTopicType},
		{"bad type", rmq.Topic{Name: "t", SlotAmount: 8, Type: 9}, rmq.ErrInvalidTopicType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.topic.Validate()
			if tc.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func TestDefineTopic(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		price := rmq.Topic{Name: "price", SlotAmount: 64, Type: rmq.Priority}
		require.NoError(t, c.DefineTopic(ctx, price))
		require.NoError(t, c.DefineTopic(ctx, price), "the same definition again is fine")

		err := c.DefineTopic(ctx, rmq.Topic{Name: "price", SlotAmount: 32, Type: rmq.Priority})
		assert.ErrorIs(t, err, rmq.ErrTopicConflict)
		err = c.DefineTopic(ctx, rmq.Topic{Name: "price", SlotAmount: 64, Type: rmq.FixedTime})
		assert.ErrorIs(t, err, rmq.ErrTopicConflict)
		assert.ErrorIs(t, c.DefineTopic(ctx, rmq.Topic{Name: "bad{", SlotAmount: 64, Type: rmq.FixedTime}), rmq.ErrInvalidTopic)

		// Another client of the namespace sees the one stored definition.
		other, err := rmq.New(b.Redis, rmq.WithNamespace(c.Namespace()))
		require.NoError(t, err)
		assert.ErrorIs(t, other.DefineTopic(ctx, rmq.Topic{Name: "price", SlotAmount: 8, Type: rmq.Priority}), rmq.ErrTopicConflict)
		topics, err := other.Topics(ctx)
		require.NoError(t, err)
		assert.Equal(t, []rmq.Topic{price}, topics)
	})
}

// keyCount counts the keys of the client's namespace.
func keyCount(t *testing.T, b testenv.Backend, ns string) int {
	t.Helper()
	keys, err := b.Redis.Keys(context.Background(), ns+":*").Result()
	require.NoError(t, err)
	n := 0
	for _, k := range keys {
		if !strings.HasSuffix(k, ":topics") {
			n++
		}
	}
	return n
}

// Structs that embed a pointer to a message type implement OutgoingMessage
// through it; left nil, they are a nil message.
type (
	embeddedRangeMerge struct{ *rmq.RangeMergeMessage }
	embeddedPriority   struct{ *rmq.PriorityMessage }
	embeddedFixedTime  struct {
		*rmq.FixedTimeMessage
		Note string
	}
)

func TestSendRejectsBadInputAndStoresNothing(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	c := newClient(t, b, rmq.WithMaxContentSize(16))
	define(t, c, "merge", 8, rmq.RangeMerge)
	define(t, c, "prio", 8, rmq.Priority)
	define(t, c, "fixed", 8, rmq.FixedTime)
	future := time.Now().Add(time.Hour)
	cases := []struct {
		name string
		msg  rmq.OutgoingMessage
		want error
	}{
		{"nil", nil, rmq.ErrInvalidMessage},
		{"nil RangeMergeMessage", (*rmq.RangeMergeMessage)(nil), rmq.ErrInvalidMessage},
		{"nil PriorityMessage", (*rmq.PriorityMessage)(nil), rmq.ErrInvalidMessage},
		{"nil FixedTimeMessage", (*rmq.FixedTimeMessage)(nil), rmq.ErrInvalidMessage},
		{"nil RangeMergeMessage embedded", embeddedRangeMerge{}, rmq.ErrInvalidMessage},
		{"nil PriorityMessage embedded", &embeddedPriority{}, rmq.ErrInvalidMessage},
		{"nil FixedTimeMessage embedded", embeddedFixedTime{}, rmq.ErrInvalidMessage},
		{"empty content", rmq.PriorityMessage{Topic: "prio", Priority: 20}, rmq.ErrEmptyContent},
		{"content too large", rmq.PriorityMessage{Topic: "prio", Content: make([]byte, 17), Priority: 20}, rmq.ErrContentTooLarge},
		{"priority 16", rmq.PriorityMessage{Topic: "prio", Content: []byte("x"), Priority: 16}, rmq.ErrInvalidPriority},
		{"priority negative", rmq.PriorityMessage{Topic: "prio", Content: []byte("x"), Priority: -5}, rmq.ErrInvalidPriority},
		{"priority huge", rmq.PriorityMessage{Topic: "prio", Content: []byte("x"), Priority: rmq.MaxPriority + 1}, rmq.ErrInvalidPriority},
		{"fixed time past", rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("x"), FixedTime: time.Now().Add(-time.Second)}, rmq.ErrInvalidTime},
		{"fixed time zero", rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("x")}, rmq.ErrInvalidTime},
		{"fixed time too far", rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("x"), FixedTime: time.Date(40000, 1, 1, 0, 0, 0, 0, time.UTC)}, rmq.ErrInvalidTime},
		{"fixed time past int64 ms", rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("x"), FixedTime: time.Date(300_000_000, 1, 1, 0, 0, 0, 0, time.UTC)}, rmq.ErrInvalidTime},
		{"range zero", rmq.RangeMergeMessage{Topic: "merge", Content: []byte("x")}, rmq.ErrInvalidTime},
		{"range negative", rmq.RangeMergeMessage{Topic: "merge", Content: []byte("x"), TimeRange: -time.Second}, rmq.ErrInvalidTime},
		{"unknown topic", rmq.PriorityMessage{Topic: "nope", Content: []byte("x"), Priority: 20}, rmq.ErrUnknownTopic},
		{"invalid topic", rmq.PriorityMessage{Topic: "no{pe", Content: []byte("x"), Priority: 20}, rmq.ErrInvalidTopic},
		{"type mismatch", rmq.PriorityMessage{Topic: "fixed", Content: []byte("x"), Priority: 20}, rmq.ErrTopicTypeMismatch},
		{"type mismatch 2", rmq.FixedTimeMessage{Topic: "merge", Content: []byte("x"), FixedTime: future}, rmq.ErrTopicTypeMismatch},
		{"type mismatch 3", rmq.RangeMergeMessage{Topic: "prio", Content: []byte("x"), TimeRange: time.Second}, rmq.ErrTopicTypeMismatch},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Producer().Send(ctx, tc.msg)
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, 0, keyCount(t, b, c.Namespace()), "a rejected send stored something")
			if tc.msg != nil {
				err = c.Producer().SendBatch(ctx, rmq.PriorityMessage{Topic: "prio", Content: []byte("ok"), Priority: 20}, tc.msg)
				require.ErrorIs(t, err, tc.want)
				assert.Contains(t, err.Error(), "message 1")
				assert.Equal(t, 0, keyCount(t, b, c.Namespace()), "a rejected batch stored something")
			}
		})
	}
}

// A FixedTime after the year 2262 (where time.Time.UnixNano overflows) is
// stored for its own time, to the millisecond, rounded up.
func TestFixedTimeAfter2262KeepsItsTime(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "fixed", 1, rmq.FixedTime)
	when := time.Date(2300, 1, 1, 0, 0, 0, 1, time.UTC)
	require.NoError(t, c.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("x"), FixedTime: when}))
	zs, err := b.Redis.ZRangeWithScores(ctx, c.Namespace()+":{fixed:0}:store", 0, -1).Result()
	require.NoError(t, err)
	require.Len(t, zs, 1)
	assert.Equal(t, float64(when.UnixMilli()+1), zs[0].Score)
}

// Every method of Client and Producer that takes a context refuses a nil
// one with ErrNilContext, before any I/O: nothing is stored, nothing
// panics, and the client goes on working.
func TestNilContextIsRefused(t *testing.T) {
	b := testenv.Mini(t)
	ctx := context.Background()
	c := newClient(t, b)
	define(t, c, "prio", 1, rmq.Priority)
	msg := rmq.PriorityMessage{Topic: "prio", Content: []byte("x"), Priority: 20}
	var nilCtx context.Context
	calls := map[string]func() error{
		"Send":      func() error { return c.Producer().Send(nilCtx, msg) },
		"SendBatch": func() error { return c.Producer().SendBatch(nilCtx, msg, msg) },
		"Cancel":    func() error { _, err := c.Producer().Cancel(nilCtx, "prio", []byte("x"), ""); return err },
		"DefineTopic": func() error {
			return c.DefineTopic(nilCtx, rmq.Topic{Name: "other", SlotAmount: 1, Type: rmq.Priority})
		},
		"Topics":       func() error { _, err := c.Topics(nilCtx); return err },
		"DeleteTopic":  func() error { return c.DeleteTopic(nilCtx, "prio", rmq.Force()) },
		"PauseTopic":   func() error { return c.PauseTopic(nilCtx, "prio") },
		"ResumeTopic":  func() error { return c.ResumeTopic(nilCtx, "prio") },
		"SetRateLimit": func() error { return c.SetRateLimit(nilCtx, "prio", rmq.RateLimit{PerSecond: 1, Burst: 1}) },
		"FlowControls": func() error { _, err := c.FlowControls(nilCtx); return err },
		"Stats":        func() error { _, err := c.Stats(nilCtx, "prio"); return err },
		"Backlog":      func() error { _, err := c.Backlog(nilCtx, "prio"); return err },
		"DeadMessages": func() error { _, err := c.DeadMessages(nilCtx, "prio", 10); return err },
		"RequeueDead":  func() error { _, err := c.RequeueDead(nilCtx, "prio"); return err },
		"PurgeDead":    func() error { _, err := c.PurgeDead(nilCtx, "prio"); return err },
		"NextDue":      func() error { _, err := c.NextDue(nilCtx, "prio", 0, 10); return err },
		"DeleteDead":   func() error { _, err := c.DeleteDead(nilCtx, "prio", 0, []byte("x")); return err },
		"OpenBreakers": func() error { _, err := c.OpenBreakers(nilCtx, "prio"); return err },
		"Workers":      func() error { _, err := c.Workers(nilCtx); return err },
		"Owners":       func() error { _, err := c.Owners(nilCtx, "prio"); return err },
		"NamespaceMetrics": func() error {
			_, _, err := c.NamespaceMetrics(nilCtx, "prio", 1)
			return err
		},
		"Start":    func() error { return c.Start(nilCtx) },
		"Shutdown": func() error { return c.Shutdown(nilCtx) },
		"Close":    func() error { return c.Close(nilCtx) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = call() })
			assert.ErrorIs(t, err, rmq.ErrNilContext)
			assert.Equal(t, 0, keyCount(t, b, c.Namespace()), "a refused call stored something")
		})
	}
	require.NoError(t, c.Producer().Send(ctx, msg), "the client still works")
	topics, err := c.Topics(ctx)
	require.NoError(t, err)
	assert.Len(t, topics, 1, "the topic is still defined, no other one")
}

// "." and ".." are not names, though made of allowed characters: a ZooKeeper
// path cannot hold them as a component, so a topic or namespace named so
// would fail there (untyped, after Redis held the definition).
func TestDotNamesAreInvalid(t *testing.T) {
	b := testenv.Mini(t)
	for _, name := range []string{".", ".."} {
		assert.ErrorIs(t, rmq.Topic{Name: name, SlotAmount: 1, Type: rmq.Priority}.Validate(), rmq.ErrInvalidTopic, "topic %q", name)
		_, err := rmq.New(b.Redis, rmq.WithNamespace(name))
		assert.ErrorIs(t, err, rmq.ErrInvalidNamespace, "namespace %q", name)
	}
	for _, name := range []string{"...", ".a", "a.", "-"} {
		assert.NoError(t, rmq.Topic{Name: name, SlotAmount: 1, Type: rmq.Priority}.Validate(), "topic %q", name)
	}
}
