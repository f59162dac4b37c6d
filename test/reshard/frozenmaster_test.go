package reshard_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A master is frozen (SIGSTOP) and its replica takes over. A message then
// sent by another process to a parked slot of that master reaches the
// consumer within seconds: the reach watch's failed PINGs ask for a reload
// of the slot map, and the sharded subscription follows it (with its idle
// sweep out of the way, the consumer waited for the subscription's own PING
// to fail: 14-21 s). Then the promoted master is killed too, so that those
// slots are down for good (the Cluster serves the rest, without full
// coverage): a message stored without a wake-up on a healthy master is
// still found by a consumer's idle sweep (its answer was the dead master's
// failure, for every parked slot of the thread). One private Cluster for
// both: a consumer per namespace, swept or not.
func TestClusterMasterFrozenThenDownKeepsOthersServed(t *testing.T) {
	cl := testenv.StartCluster(t, testenv.ClusterOptions{PartialCoverage: true})
	ctx := context.Background()
	const slots = 16
	woken, swept := "frozen-woken", "frozen-swept"
	victim, own := victimMaster(t, cl, []string{woken, swept}, "t", slots)
	replica, err := cl.ReplicaOf(ctx, victim.Addr)
	require.NoError(t, err)
	healthy := -1
	for i := range slots {
		if !ownsTopicSlot(victim, "t", i) {
			healthy = i
		}
	}
	require.NotEqual(t, -1, healthy, "no slot outside the victim master")

	consume := func(ns string, opts ...rmq.Option) (*rmq.Client, chan string) {
		c := newClient(t, cl, ns, opts...)
		require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "t", SlotAmount: slots, Type: rmq.Priority}))
		got := make(chan string, 16)
		require.NoError(t, c.Subscribe("t", rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
			got <- string(m.Content)
			return nil
		}), rmq.WithThreads(1)))
		start(t, c)
		return c, got
	}
	await := func(got chan string, content string, within time.Duration) time.Duration {
		t.Helper()
		begin := time.Now()
		deadline := time.After(within)
		for {
			select {
			case s := <-got:
				if s == content {
					return time.Since(begin)
				}
			case <-deadline:
				t.Fatalf("%s not delivered within %v", content, within)
			}
		}
	}
	wc, wgot := consume(woken, rmq.WithIdleSweep(10*time.Minute))
	var warned testenv.Warnings
	sc, sgot := consume(swept, rmq.WithIdleSweep(300*time.Millisecond), rmq.WithLogger(slog.New(&warned)))
	for _, c := range []*rmq.Client{wc, sc} {
		require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "t", Content: []byte("warm"), Priority: 20,
			SlotBasis: basisOf(own[0], slots)}))
	}
	await(wgot, "warm", 10*time.Second)
	await(sgot, "warm", 10*time.Second)
	time.Sleep(time.Second) // every slot has looked again and parked

	thaw := cl.Freeze(t, victim.Addr)
	frozen := time.Now()
	rc := nodeClient(t, replica)
	for {
		role, err := rc.Do(ctx, "ROLE").Slice()
		if err == nil && len(role) > 0 && role[0] == "master" {
			break
		}
		require.Less(t, time.Since(frozen), 30*time.Second, "replica %s not promoted", replica)
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("replica %s promoted %v after %s was frozen", replica, time.Since(frozen).Round(time.Millisecond), victim.Addr)
	time.Sleep(500 * time.Millisecond)

	// Another process sends: a client of its own, whose slot map is fresh
	// once the nodes agree on the promotion (each try bounded, the frozen
	// master's answer never coming).
	p := newClient(t, cl, woken)
	for sending := time.Now(); ; {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := p.Producer().Send(sctx, rmq.PriorityMessage{Topic: "t", Content: []byte("after"), Priority: 20,
			SlotBasis: basisOf(own[0], slots)})
		cancel()
		if err == nil {
			break
		}
		require.Less(t, time.Since(sending), 30*time.Second, "send: %v", err)
		time.Sleep(100 * time.Millisecond)
	}
	took := await(wgot, "after", 30*time.Second)
	t.Logf("the message sent after the promotion was delivered %v after its send", took.Round(time.Millisecond))
	require.Less(t, took, 8*time.Second,
		"a message sent to a parked slot of the promoted master waited for the consumer's sharded PING to fail")

	// The victim, thawed, rejoins as the promoted master's replica; both go,
	// so that its slots are down for good.
	thaw()
	time.Sleep(time.Second)
	cl.Kill(t, victim.Addr)
	cl.Kill(t, replica)
	time.Sleep(time.Second)
	key := rdb.NewKeyspace(swept).Slot("t", healthy).Store
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { r.Close() })
	require.NoError(t, r.ZAdd(ctx, key, redis.Z{Score: 100, Member: "unannounced"}).Err())
	select {
	case s := <-sgot:
		t.Logf("%s found by the idle sweep", s)
	case <-time.After(10 * time.Second):
		t.Fatalf("a message stored without a wake-up on a healthy master (slot %d) was not found by the idle "+
			"sweep within 10 s while master %s (slots %v) was down; %d lines logged at Warn, the first %q",
			healthy, victim.Addr, own, len(warned.Logged()), firstSweepWarn(warned.Logged()))
	}
}

// victimMaster returns a master of cl that holds none of the namespaces' own
// hash slots (the coordinator's keys) and serves at least one of the
// topic's slots, with the topic slots it serves.
func victimMaster(t *testing.T, cl *testenv.PrivateCluster, namespaces []string, topic string, slots int) (testenv.ClusterMaster, []int) {
	t.Helper()
	masters, err := cl.Masters(context.Background())
	require.NoError(t, err)
next:
	for _, m := range masters {
		n := testenv.ClusterNode{Slots: m.Slots}
		for _, ns := range namespaces {
			if n.OwnsSlot(testenv.KeySlot(ns)) {
				continue next
			}
		}
		var own []int
		for i := range slots {
			if ownsTopicSlot(m, topic, i) {
				own = append(own, i)
			}
		}
		if len(own) > 0 {
			return m, own
		}
	}
	t.Fatal("no master serves topic slots without the namespaces' keys")
	return testenv.ClusterMaster{}, nil
}

// ownsTopicSlot reports whether m serves slot i of topic.
func ownsTopicSlot(m testenv.ClusterMaster, topic string, i int) bool {
	return testenv.ClusterNode{Slots: m.Slots}.OwnsSlot(testenv.KeySlot(topic + ":" + strconv.Itoa(i)))
}

// firstSweepWarn returns the first logged warning of a failed idle sweep.
func firstSweepWarn(lines []string) string {
	for _, l := range lines {
		if strings.Contains(l, "idle sweep failed") {
			return l
		}
	}
	return ""
}
