package rmq_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/rmq-go/rmq/lua"
)

// beforeSlotDelete is a go-redis hook that runs fn (once) just before the
// first call of deleteslot.lua reaches Redis: the moment a separate
// emptiness check of the whole topic would already have passed.
type beforeSlotDelete struct {
	sha  string
	fn   func()
	done atomic.Bool
}

func newBeforeSlotDelete(fn func()) *beforeSlotDelete {
	sum := sha1.Sum([]byte(lua.DeleteSlot()))
	return &beforeSlotDelete{sha: hex.EncodeToString(sum[:]), fn: fn}
}

func (h *beforeSlotDelete) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *beforeSlotDelete) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); len(args) > 1 && (args[1] == h.sha || args[1] == lua.DeleteSlot()) && h.done.CompareAndSwap(false, true) {
			h.fn()
		}
		return next(ctx, cmd)
	}
}

func (h *beforeSlotDelete) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// contentOfSlot returns a content whose slot among slots is slot.
func contentOfSlot(slot, slots int) string {
	for i := 0; ; i++ {
		if s := fmt.Sprintf("late-%d", i); rmq.SlotIndex([]byte(s), slots) == slot {
			return s
		}
	}
}

// A message sent once DeleteTopic is under way, into a slot not yet
// deleted, is found by that slot's own check-and-delete: the deletion stops
// with ErrTopicNotEmpty, the message is kept and the topic stays defined.
// With Force it goes with the rest.
func TestDeleteTopicNeverDeletesAMessageSentDuringTheDeletion(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		const slots = 4
		define(t, c, "t", slots, rmq.Priority)
		late := contentOfSlot(slots-1, slots) // the last slot deleted
		var sendErr error
		hook := newBeforeSlotDelete(func() {
			sendErr = c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(late), Priority: 20})
		})
		b.Redis.AddHook(hook)

		err := c.DeleteTopic(ctx, "t")
		require.True(t, hook.done.Load(), "the message was sent once the deletion had begun")
		require.NoError(t, sendErr)
		require.ErrorIs(t, err, rmq.ErrTopicNotEmpty)
		assert.Contains(t, err.Error(), fmt.Sprintf("slot %d holds 1 messages (store 1,", slots-1))
		st := stats(t, c, "t")
		assert.Equal(t, int64(1), st.Store, "the late message is kept, and the topic is still defined")
		assert.Equal(t, int64(1), st.Slots[slots-1].Store)

		require.NoError(t, c.DeleteTopic(ctx, "t", rmq.Force()))
		_, err = c.Stats(ctx, "t")
		assert.ErrorIs(t, err, rmq.ErrUnknownTopic)
		assert.Equal(t, 0, keyCount(t, b, c.Namespace()), "no key of the topic is left")
	})
}
