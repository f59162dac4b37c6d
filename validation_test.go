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
		{"empty content", rmq.PriorityMessage{Topic: "prio", Priority: 20}, rmq.ErrEmptyContent},
		{"content too large", rmq.PriorityMessage{Topic: "prio", Content: make([]byte, 17), Priority: 20}, rmq.ErrContentTooLarge},
		{"priority 16", rmq.PriorityMessage{Topic: "prio", Content: []byte("x"), Priority: 16}, rmq.ErrInvalidPriority},
		{"priority negative", rmq.PriorityMessage{Topic: "prio", Content: []byte("x"), Priority: -5}, rmq.ErrInvalidPriority},
		{"priority huge", rmq.PriorityMessage{Topic: "prio", Content: []byte("x"), Priority: rmq.MaxPriority + 1}, rmq.ErrInvalidPriority},
		{"fixed time past", rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("x"), FixedTime: time.Now().Add(-time.Second)}, rmq.ErrInvalidTime},
		{"fixed time zero", rmq.FixedTimeMessage{Topic: "fixed", Content: []byte("x")}, rmq.ErrInvalidTime},
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
