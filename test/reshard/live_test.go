package reshard_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

const (
	liveSlots     = 64
	liveProducers = 4
	liveMoved     = 3000 // hash slots redis-cli moves, of the 5461 or so a master has
)

// TestLiveReshardLosesNothing moves 3,000 hash slots from the master that
// holds the most of a 64-slot topic's slots to another master with
// redis-cli --cluster reshard (keys and all, as a Cluster grows), while four
// producers send (Send and SendBatch by turns) and two workers consume (see
// runLive for what it asserts and prints).
func TestLiveReshardLosesNothing(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	masters, err := cl.Masters(ctx)
	require.NoError(t, err)
	held := map[string]int{} // master → topic slots
	for i := range liveSlots {
		for _, m := range masters {
			if (testenv.ClusterNode{Slots: m.Slots}).OwnsSlot(testenv.KeySlot("t:" + strconv.Itoa(i))) {
				held[m.Addr]++
			}
		}
	}
	from, to := masters[0], masters[1]
	for _, m := range masters {
		if held[m.Addr] > held[from.Addr] {
			from = m
		}
	}
	for _, m := range masters {
		if m.Addr != from.Addr {
			to = m
			break
		}
	}
	runLive(t, cl, fmt.Sprintf("reshard of %d hash slots %s → %s", liveMoved, from.Addr, to.Addr), func() {
		out, err := exec.Command("redis-cli", "--cluster", "reshard", from.Addr, "--cluster-from", from.ID,
			"--cluster-to", to.ID, "--cluster-slots", strconv.Itoa(liveMoved), "--cluster-yes").CombinedOutput()
		require.NoError(t, err, "redis-cli --cluster reshard: %s", tail(out))
	})
}

// TestLiveGrowLosesNothing grows the Cluster by a fourth master and its
// replica (redis-cli --cluster add-node) and rebalances it (redis-cli
// --cluster rebalance --cluster-use-empty-masters: about 4,096 hash slots
// move to the new master from the other three, keys and all), while four
// producers send and two workers consume, all started before the new master
// existed (see runLive). The producers wait for a replica's acknowledgement
// of each message (WithReplicaAck), the new master's too.
func TestLiveGrowLosesNothing(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	runLive(t, cl, "growth by a master and rebalance", func() {
		m := cl.Grow(t)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		require.NoError(t, cl.Rebalance(ctx))
		ms, err := cl.Masters(ctx)
		require.NoError(t, err)
		for _, got := range ms {
			if got.Addr == m.Addr {
				return
			}
		}
		t.Fatalf("the new master %s serves no hash slot after the rebalance", m.Addr)
	}, rmq.WithReplicaAck(1, time.Second))
}

// TestLiveShrinkLosesNothing shrinks the Cluster by a master: its hash
// slots move to the other two (redis-cli --cluster rebalance with its weight
// 0, keys and all) and it and its replica leave (redis-cli --cluster
// del-node, which shuts them down), while four producers send and two
// workers consume (see runLive).
func TestLiveShrinkLosesNothing(t *testing.T) {
	t.Parallel()
	cl := testenv.StartCluster(t, testenv.ClusterOptions{})
	ctx := context.Background()
	masters, err := cl.Masters(ctx)
	require.NoError(t, err)
	gone := masters[len(masters)-1]
	runLive(t, cl, "shrink by the master "+gone.Addr, func() {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		require.NoError(t, cl.Shrink(cctx, gone))
	})
}

// runLive sends to a 64-slot topic on cl from four producers (Send and
// SendBatch by turns, through a client with producerOpts) and consumes it
// with two workers of two threads, and after 1.5 s runs change, the Cluster's change under load. Every call
// returns nil, every message acknowledged is delivered, no two listeners
// ever hold one slot at once, and nothing is logged at Warn or above (a
// slot's move is no failure: wake-ups and subscriptions follow it);
// duplicates are allowed, and counted, and the longest pause of a moved
// slot's deliveries from the change on is printed beside that of the other
// slots.
func runLive(t *testing.T, cl *testenv.PrivateCluster, what string, change func(), producerOpts ...rmq.Option) {
	l, producer := startLedger(t, cl, "live", producerOpts...)
	before := topicMasters(t, cl)

	stop := l.produce(producer, liveProducers)
	time.Sleep(1500 * time.Millisecond)
	start := time.Now()
	l.mu.Lock()
	l.since = start
	l.mu.Unlock()
	change()
	took := time.Since(start)
	time.Sleep(1500 * time.Millisecond)
	stop()

	after := topicMasters(t, cl)
	moved := 0
	var movedGap, keptGap time.Duration // the longest pause of a moved slot's deliveries, and of another's
	l.mu.Lock()
	for i := range liveSlots {
		if before[i] != after[i] {
			moved++
			movedGap = max(movedGap, l.gap[i])
		} else {
			keptGap = max(keptGap, l.gap[i])
		}
	}
	l.mu.Unlock()
	require.Positive(t, moved, "no topic slot moved")

	l.awaitDelivered(t)
	l.mu.Lock()
	defer l.mu.Unlock()
	dups := 0
	for _, n := range l.delivered {
		if n > 1 {
			dups++
		}
	}
	t.Logf("%s in %v moved %d of %d topic slots; acknowledged %d, send errors %v, "+
		"delivered %d, duplicates %d, overlapping listener calls %d; from the change on, the longest pause "+
		"between two deliveries of a moved slot %v, of another slot %v",
		what, took.Round(time.Millisecond), moved, liveSlots, len(l.acked), l.sendErrs,
		len(l.delivered), dups, l.overlaps.Load(), movedGap.Round(time.Millisecond), keptGap.Round(time.Millisecond))
	assert.Empty(t, l.sendErrs, "Send and SendBatch failed during the change")
	assert.Zero(t, l.overlaps.Load(), "two listeners held one slot at once")
	assert.Empty(t, l.warned.Logged(), "logged at Warn during the change")
}

// topicMasters returns the address of the master serving each slot of the
// live topic.
func topicMasters(t *testing.T, cl *testenv.PrivateCluster) []string {
	t.Helper()
	out := make([]string, liveSlots)
	for i := range out {
		addr, err := cl.MasterOf(context.Background(), testenv.KeySlot("t:"+strconv.Itoa(i)))
		require.NoError(t, err)
		out[i] = addr
	}
	return out
}

func tail(out []byte) string {
	if len(out) > 2000 {
		out = out[len(out)-2000:]
	}
	return string(out)
}
