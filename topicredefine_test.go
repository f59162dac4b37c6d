package rmq_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// DeleteTopic deletes the topic's shared metrics. A process that consumed
// the topic and was shut down (Shutdown: no longer consuming, so DeleteTopic
// goes ahead; its producer goes on) shares what its consumers counted before
// its presence goes, so no later flush adds it back under the deleted
// topic's name: a topic defined again under that name starts from zero in
// NamespaceMetrics.
func TestDeletedTopicsMetricsDoNotComeBack(t *testing.T) {
	t.Parallel() // waits on timers, reads nothing process-wide
	testenv.ForEachRealAtOnce(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		admin := newClientIn(t, b, ns)
		define(t, admin, "t", 1, rmq.Priority)
		c1 := newClientIn(t, b, ns)
		rec := newRecorder()
		require.NoError(t, c1.Subscribe("t", rec))
		done := make(chan error, 1)
		go func() { done <- c1.Start(ctx) }()
		awaitHeld(t, admin, "t", 1, 0)
		for i := range 5 {
			require.NoError(t, admin.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: fmt.Appendf(nil, "m%d", i), Priority: 20}))
		}
		rec.waitCalls(t, 5, 5*time.Second)
		require.NoError(t, c1.Shutdown(ctx))
		require.NoError(t, <-done)
		eventually(t, 5*time.Second, "committed", func() bool { st := stats(t, admin, "t"); return st.Prepare+st.Store == 0 })

		require.NoError(t, admin.DeleteTopic(ctx, "t"))
		define(t, admin, "t", 1, rmq.Priority)
		time.Sleep(2500 * time.Millisecond) // a periodic flush of every client

		m, _, err := admin.NamespaceMetrics(ctx, "t", 1)
		require.NoError(t, err)
		assert.Zero(t, m.Delivered, "the new topic has delivered nothing")
		assert.Zero(t, m.Committed, "the new topic has committed nothing")
	})
}

// DefineTopic that succeeds leaves the client with the definition it
// defined. Here another client deleted the topic and this one defines it
// again with 8 slots instead of 4: had it kept its cached 4-slot definition,
// its Stats would list 4 slots and its sends go to CRC & 3 where every other
// client sends the same key to CRC & 7: two slots, two consumers at once,
// for one key.
func TestDefineTopicAfterDeletionElsewhereTakesTheNewDefinition(t *testing.T) {
	b := testenv.Single(t)
	ctx := context.Background()
	ns := testenv.Namespace(t, b)
	c := newClientIn(t, b, ns)
	other := newClientIn(t, b, ns)
	define(t, c, "t", 4, rmq.Priority)
	require.NoError(t, other.DeleteTopic(ctx, "t"))

	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: 8, Type: rmq.Priority}))
	topics, err := c.Topics(ctx)
	require.NoError(t, err)
	require.Equal(t, []rmq.Topic{{Name: "t", SlotAmount: 8, Type: rmq.Priority}}, topics, "Redis holds the new definition")
	assert.Equal(t, 8, stats(t, c, "t").SlotAmount, "the client that defined it uses it")

	var content string
	for i := 0; ; i++ {
		content = fmt.Sprintf("k%d", i)
		if rmq.SlotIndex([]byte(content), 8) >= 4 {
			break
		}
	}
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(content), Priority: 20}))
	st := stats(t, other, "t")
	assert.Equal(t, int64(1), st.Slots[rmq.SlotIndex([]byte(content), 8)].Store, "the message is in its slot of the 8")
}

// DeleteTopic without Force never deletes a topic that holds messages, and
// takes the topic's slots from the definition stored now: a client that knew
// the topic with 4 slots, after another deleted it and defined it again with
// 8, checks all 8, not slots 0..3 alone; the message in slot 6 keeps the
// topic defined (with the cached definition it would have stayed behind,
// unreachable).
func TestDeleteTopicReadsTheStoredDefinition(t *testing.T) {
	testenv.ForEachReal(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		ns := testenv.Namespace(t, b)
		c := newClientIn(t, b, ns)
		other := newClientIn(t, b, ns)
		define(t, c, "t", 4, rmq.Priority)
		require.NoError(t, other.DeleteTopic(ctx, "t"))
		define(t, other, "t", 8, rmq.Priority)
		content := contentOfSlot(6, 8)
		require.NoError(t, other.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(content), Priority: 20}))

		err := c.DeleteTopic(ctx, "t")
		assert.ErrorIs(t, err, rmq.ErrTopicNotEmpty, "a topic holding a message deleted without Force")
		topics, lerr := other.Topics(ctx)
		require.NoError(t, lerr)
		assert.Len(t, topics, 1, "the topic holding a message stays defined")
	})
}
