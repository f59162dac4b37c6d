package rmq_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// The admin calls of a client that knew a topic read it as Redis holds it
// now, after another process deleted it and defined it again with more
// slots: Stats and Backlog count every slot, and the calls that take a slot
// accept the new ones. (They read the client's cached definition, with the
// old slots, for as long as the client lived.)
func TestAdminCallsReadATopicDefinedAgainElsewhere(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		define(t, c, "again", 2, rmq.Priority)
		_, err := c.Backlog(ctx, "again") // cached with 2 slots
		require.NoError(t, err)

		other := newClientIn(t, b, c.Namespace())
		require.NoError(t, other.DeleteTopic(ctx, "again"))
		define(t, other, "again", 8, rmq.Priority)
		for i := range 40 {
			require.NoError(t, other.Producer().Send(ctx, rmq.PriorityMessage{Topic: "again", Content: fmt.Appendf(nil, "m%d", i), Priority: 100}))
		}
		truth := stats(t, other, "again")
		require.Equal(t, int64(40), truth.Store)
		slot := -1
		for i, s := range truth.Slots {
			if i >= 2 && s.Store > 0 {
				slot = i
				break
			}
		}
		require.GreaterOrEqual(t, slot, 2, "a message in a new slot")

		st, err := c.Stats(ctx, "again")
		require.NoError(t, err)
		assert.Equal(t, int64(40), st.Store, "Stats")
		assert.Len(t, st.Slots, 8)
		bl, err := c.Backlog(ctx, "again") // within a second of the first read
		require.NoError(t, err)
		assert.Equal(t, int64(40), bl.Store, "Backlog")
		due, err := c.NextDue(ctx, "again", slot, 10)
		require.NoError(t, err, "NextDue of slot %d", slot)
		assert.Len(t, due, int(truth.Slots[slot].Store))
		_, err = c.DeleteDead(ctx, "again", slot, []byte("none"))
		assert.NoError(t, err, "DeleteDead in slot %d", slot)
	})
}
