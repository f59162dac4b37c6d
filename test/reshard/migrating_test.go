package reshard_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// migratingHold is how long the test keeps a hash slot migrating.
const migratingHold = 2 * time.Second

// basisOf returns a slot basis that puts a message in slot of a topic of
// amount slots (slot < amount).
func basisOf(slot, amount int) string {
	for i := 0; ; i++ {
		b := "b" + strconv.Itoa(i)
		if rmq.SlotIndex([]byte(b), amount) == slot {
			return b
		}
	}
}

// TestConsumerWaitsOutAMigratingSlot: a topic slot's hash slot is held
// migrating to another master for two seconds (CLUSTER SETSLOT IMPORTING and
// MIGRATING, its keys still on the old master), so the consumer's cycles on
// it are refused (a script's keys partly missing: ASK, then TRYAGAIN on the
// importing master) until its keys have moved and it is handed over. Only
// that slot waits: a slot on the same master, served by the same thread,
// gets each of the messages sent to it meanwhile within half a second, the
// slot that moved gets its message soon after the handover, and nothing is
// logged at Warn. Before, each refusal was logged as a failed pop (a Warn
// line every 50–100 ms) and backed the thread off from the whole master
// until the other slot's next pop succeeded (its messages took up to 160 ms
// in two runs, 46–52 ms after).
func TestConsumerWaitsOutAMigratingSlot(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	var warned testenv.Warnings
	c := newClient(t, cl, "migrating", rmq.WithLogger(slog.New(&warned)))
	const slots = 16
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: slots, Type: rmq.Priority}))

	hashSlot := testenv.KeySlot("t:0")
	from, to, err := cl.SlotMove(ctx, hashSlot)
	require.NoError(t, err)
	other := -1 // a topic slot on the same master
	for i := 1; i < slots && other < 0; i++ {
		if (testenv.ClusterNode{Slots: from.Slots}).OwnsSlot(testenv.KeySlot("t:" + strconv.Itoa(i))) {
			other = i
		}
	}
	require.NotEqual(t, -1, other, "no other topic slot on %s", from.Addr)

	var mu sync.Mutex
	sent := map[string]time.Time{}
	took := map[string]time.Duration{}
	got := make(chan string, 64)
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
		mu.Lock()
		took[string(m.Content)] = time.Since(sent[string(m.Content)])
		mu.Unlock()
		got <- string(m.Content)
		return nil
	}), rmq.WithThreads(1)))
	start(t, c)
	send := func(content string, slot int) {
		t.Helper()
		mu.Lock()
		sent[content] = time.Now()
		mu.Unlock()
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte(content),
			Priority: 20, SlotBasis: basisOf(slot, slots)}))
	}
	await := func(content string, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		for {
			select {
			case s := <-got:
				if s == content {
					return
				}
			case <-deadline:
				t.Fatalf("%s not delivered within %v", content, within)
			}
		}
	}
	send("warm", 0) // the slot's keys exist on the old master, and a consumer holds it
	await("warm", 10*time.Second)

	require.NoError(t, cl.StartMigration(ctx, hashSlot, from, to))
	send("moved", 0)
	held := time.Now()
	for i := 0; time.Since(held) < migratingHold; i++ {
		content := "stayed-" + strconv.Itoa(i)
		send(content, other)
		await(content, 5*time.Second)
		time.Sleep(100 * time.Millisecond)
	}
	_, _, err = cl.FinishMigration(ctx, hashSlot, from, to)
	require.NoError(t, err)
	handed := time.Now()
	await("moved", 10*time.Second)
	after := time.Since(handed)

	mu.Lock()
	defer mu.Unlock()
	var worst time.Duration
	for content, d := range took {
		if strings.HasPrefix(content, "stayed-") {
			worst = max(worst, d)
		}
	}
	t.Logf("while hash slot %d migrated %s → %s for %v, the other slot's messages took at most %v; "+
		"the moved slot's message came %v after the handover", hashSlot, from.Addr, to.Addr, migratingHold,
		worst.Round(time.Millisecond), after.Round(time.Millisecond))
	assert.Less(t, worst, 500*time.Millisecond, "the other slot on the master waited for the migrating one")
	assert.Less(t, after, 3*time.Second, "the moved slot's message")
	assert.Empty(t, warned.Logged(), "logged at Warn while a slot migrated")
}

// TestCancelWaitsOutAMigratingSlot: Cancel of a message whose slot's hash
// slot migrates (its keys on the old master, the retry set on neither) is
// refused with TRYAGAIN until the handover; it waits that out and removes
// the message once the slot is handed over, where go-redis alone gives up
// after three tries within some 60 ms and returns the refusal.
func TestCancelWaitsOutAMigratingSlot(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	c := newClient(t, cl, "cancel")
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: 1, Type: rmq.Priority}))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("doomed"), Priority: 20}))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("kept"), Priority: 20}))

	hashSlot := testenv.KeySlot("t:0")
	from, to, err := cl.SlotMove(ctx, hashSlot)
	require.NoError(t, err)
	require.NoError(t, cl.StartMigration(ctx, hashSlot, from, to))
	type result struct {
		ok  bool
		err error
		at  time.Time
	}
	done := make(chan result, 1)
	go func() {
		ok, err := c.Producer().Cancel(ctx, "t", []byte("doomed"), "")
		done <- result{ok, err, time.Now()}
	}()
	select {
	case res := <-done:
		t.Fatalf("Cancel returned during the migration: %v, %v", res.ok, res.err)
	case <-time.After(time.Second):
	}
	_, _, err = cl.FinishMigration(ctx, hashSlot, from, to)
	require.NoError(t, err)
	handed := time.Now()
	res := <-done
	require.NoError(t, res.err)
	assert.True(t, res.ok, "the message was cancelled")
	t.Logf("Cancel returned %v after the handover", res.at.Sub(handed).Round(time.Millisecond))
	n, err := nodeClient(t, to.Addr).ZCard(ctx, "cancel:{t:0}:store").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the other message stays")
}

// TestDeleteTopicWhileTheNamespaceSlotMigrates deletes a topic while the
// hash slot of the namespace's own keys (the topic's assignment, shared
// metrics and breaker states among them) is held migrating, those keys
// still on the old master and the breaker states missing: its records are
// deleted one key per DEL, each following ASK where the key is missing, so
// the call succeeds and the keys are gone. Before, one DEL of all three was
// refused (TRYAGAIN: some of its keys missing) and DeleteTopic failed.
func TestDeleteTopicWhileTheNamespaceSlotMigrates(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	const ns = "deltopic"
	c := newClient(t, cl, ns)
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: 4, Type: rmq.Priority}))
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { r.Close() })
	k := rdb.NewKeyspace(ns)
	require.NoError(t, r.Set(ctx, k.Assignment("t"), "0:w", 0).Err())
	require.NoError(t, r.HSet(ctx, k.Stats("t"), "delivered", 1).Err())

	hashSlot, from, to := migrateCoordSlot(t, cl, ns)
	require.NoError(t, c.DeleteTopic(ctx, "t"))
	n, err := r.Exists(ctx, k.Assignment("t")).Result()
	require.NoError(t, err)
	m, err := r.Exists(ctx, k.Stats("t")).Result()
	require.NoError(t, err)
	assert.Zero(t, n+m, "the topic's records are gone")
	err = newClient(t, cl, ns).Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("x"), Priority: 20})
	assert.ErrorIs(t, err, rmq.ErrUnknownTopic, "the topic is no longer defined")
	_, _, err = cl.FinishMigration(ctx, hashSlot, from, to)
	require.NoError(t, err)
}

// TestIdleSweepWaitsOutAMigratingSlot: a consumer whose slots are all empty
// sweeps them often (WithIdleSweep) while one topic slot's hash slot is held
// migrating to another master. The sweep's EXISTS of that slot's keys is
// refused meanwhile (its keys missing on both masters: TRYAGAIN), which is no
// failure: the other slots' answers stand, so a message stored in another
// slot without a wake-up during the hold is found by the sweep before the
// hold ends, and nothing is logged at Warn. Before, the one refusal failed
// the whole sweep: a Warn line per sweep, and the message waited for the
// end of the migration.
func TestIdleSweepWaitsOutAMigratingSlot(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	var warned testenv.Warnings
	c := newClient(t, cl, "sweep", rmq.WithLogger(slog.New(&warned)), rmq.WithIdleSweep(50*time.Millisecond))
	const slots = 16
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: slots, Type: rmq.FixedTime}))
	got := make(chan string, 64)
	require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
		got <- string(m.Content)
		return nil
	}), rmq.WithThreads(1)))
	start(t, c)
	time.Sleep(500 * time.Millisecond) // every slot parked, swept

	hashSlot := testenv.KeySlot("t:0")
	from, to, err := cl.SlotMove(ctx, hashSlot)
	require.NoError(t, err)
	require.NoError(t, cl.StartMigration(ctx, hashSlot, from, to))
	held := time.Now()
	time.Sleep(300 * time.Millisecond) // a few sweeps refused
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { r.Close() })
	keys := rdb.NewKeyspace("sweep").Slots("t", slots)
	stored := time.Now()
	require.NoError(t, r.ZAdd(ctx, keys[5].Store, redis.Z{Score: 100, Member: "unannounced"}).Err())
	var found time.Duration
	select {
	case m := <-got:
		found = time.Since(stored)
		assert.Equal(t, "unannounced", m)
	case <-time.After(time.Until(held.Add(migratingHold))):
		t.Errorf("a message stored without a wake-up was not found while another slot's hash slot was migrating")
	}
	time.Sleep(time.Until(held.Add(migratingHold)))
	_, _, err = cl.FinishMigration(ctx, hashSlot, from, to)
	require.NoError(t, err)
	time.Sleep(300 * time.Millisecond)
	t.Logf("hash slot %d of topic slot 0 held migrating %s → %s for %v; a message stored without a wake-up in "+
		"slot 5 meanwhile was found by the sweep after %v", hashSlot, from.Addr, to.Addr, migratingHold,
		found.Round(time.Millisecond))
	assert.Empty(t, warned.Logged(), "logged at Warn while a swept slot's hash slot was migrating")
}
