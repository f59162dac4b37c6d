package reshard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestSendFollowsAskAndMoved: a topic slot's hash slot is set migrating from
// its master to another (nothing moved yet), so its master answers a write
// of the slot's store with ASK; Send and SendBatch follow it to the
// importing master behind ASKING. Once the hash slot is handed over, the
// client's slot map still names the old master, which answers MOVED; both
// follow that too. Every message sent is then consumed from the new master.
// Before redirections were followed, every one of these calls failed: the
// slot map, reloaded in the background, still named the old master when
// the retries ran out.
func TestSendFollowsAskAndMoved(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	c := newClient(t, cl, "redirect")
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: 1, Type: rmq.Priority}))

	hashSlot := testenv.KeySlot("t:0") // the slot's keys are "<ns>:{t:0}:…"
	from, to, err := cl.SlotMove(ctx, hashSlot)
	require.NoError(t, err)
	require.NoError(t, cl.StartMigration(ctx, hashSlot, from, to))

	send := func(content string, batch bool) {
		t.Helper()
		m := rmq.PriorityMessage{Topic: "t", Content: []byte(content), Priority: 20}
		if batch {
			require.NoError(t, c.Producer().SendBatch(ctx, m), content)
		} else {
			require.NoError(t, c.Producer().Send(ctx, m), content)
		}
	}
	// The store key is on neither master yet: the migrating one answers ASK.
	send("asked-send", false)
	send("asked-batch", true)
	pipe := nodeClient(t, to.Addr).Pipeline()
	pipe.Do(ctx, "ASKING")
	card := pipe.ZCard(ctx, "redirect:{t:0}:store")
	_, err = pipe.Exec(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), card.Val(), "both went to the importing master")

	require.NoError(t, cl.GiveSlot(ctx, hashSlot, to))
	send("moved-send", false)
	send("moved-batch", true)
	n, err := nodeClient(t, to.Addr).ZCard(ctx, "redirect:{t:0}:store").Result()
	require.NoError(t, err)
	require.Equal(t, int64(4), n, "every message is on the new master")

	got := make(chan string, 8)
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
		got <- string(m.Content)
		return nil
	})))
	start(t, c)
	seen := map[string]bool{}
	for len(seen) < 4 {
		select {
		case s := <-got:
			seen[s] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("consumed %v of 4", seen)
		}
	}
}
