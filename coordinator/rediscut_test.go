package coordinator

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A worker cut off from one Cluster master (not the coordinator's) goes on
// handing over and taking the slots of the other masters: a release or a
// claim that includes a record on the cut master waits for it at most
// half a second, not the client's read timeout, and does not keep the
// records on the other masters from being written. Neither worker declines
// anything here, so this is the window before a decline (or with no other
// worker to take the slots).
func TestRedisCoordinatorCutFromOneMasterServesTheOthers(t *testing.T) {
	t.Parallel()
	c := newOneMasterCut(t)
	c.begin(c.via)

	// a hands slots over: its releases include records on the cut master.
	bStarted := time.Now()
	bw := c.startOn("b", c.b)
	took := waitFor(t, c.board, 15*time.Second, "b holds its share off the cut master", func() bool {
		return c.holdsOff("b") > 0 && c.holdsOff("a")+c.holdsOff("b") == c.others
	})
	t.Logf("b served its share off the cut master %v after it started", took.Round(time.Millisecond))
	handedOver := took

	// a takes slots over: its claims include records on the cut master.
	waitFor(t, c.board, 15*time.Second, "b holds 8 slots", func() bool { return c.board.count("b") == 8 })
	whole := time.Since(bStarted)
	t.Logf("b served its whole share %v after it started", whole.Round(time.Millisecond))
	left := time.Now()
	bw.stop()
	took = waitFor(t, c.board, 20*time.Second, "a holds every slot off the cut master", func() bool { return c.holdsOff("a") == c.others })
	t.Logf("a served every slot off the cut master %v after b began to leave", time.Since(left).Round(time.Millisecond))
	assert.Zero(t, c.board.overlap.Load(), "two valid leases of one slot")
	// A record on the cut master waits for the client's read timeout (3 s
	// by default) when the call is not bounded.
	assert.Less(t, handedOver, 2500*time.Millisecond, "a's releases waited for the cut master")
	assert.Less(t, took, 2500*time.Millisecond, "a's claims waited for the cut master")
	// b claims a record on the cut master once a lists it as given up; its
	// patience (drain timeout 5 s + TTL 2 s + a heartbeat) would be 7.4 s.
	assert.Less(t, whole, 5*time.Second, "b waited out its patience for the cut master's slots")

	c.p.Heal()
	waitFor(t, c.board, 20*time.Second, "a holds every slot once healed", func() bool { return c.board.count("a") == 16 })
}

// oneMasterCut is a Cluster namespace for workers of testTopic (16 slots, one
// thread, a 2 s lease), some of them reaching one master (not the
// coordinator's) through a partition that a test cuts.
type oneMasterCut struct {
	t      *testing.T
	b      testenv.Backend
	ns     string
	p      *testenv.Partition
	via    testenv.Backend // the Cluster, its cut master through p
	onCut  map[int]bool    // the slots on the cut master
	others int             // how many slots are not
	board  *slotBoard
}

func newOneMasterCut(t *testing.T) *oneMasterCut {
	b := testenv.Cluster(t)
	direct := b.Redis.(*redis.ClusterClient)
	ns := testenv.Namespace(t, b)
	keys := rdb.NewKeyspace(ns)
	masterOf := func(key string) string { return testenv.MasterOf(t, direct, key) }
	coordMaster := masterOf(keys.Members())
	onCut := map[int]bool{}
	cutAddr := ""
	for s, k := range keys.OwnerKeys(testTopic, 16) {
		if m := masterOf(k); m != coordMaster && (cutAddr == "" || m == cutAddr) {
			cutAddr, onCut[s] = m, true
		}
	}
	require.NotEmpty(t, cutAddr, "every slot on the coordinator's master")
	require.Less(t, len(onCut), 16, "every slot on one master")
	p := testenv.StartPartition(t, cutAddr)
	via := testenv.ClusterVia(t, map[string]string{cutAddr: p.Addr()})
	return &oneMasterCut{t: t, b: b, ns: ns, p: p, via: via, onCut: onCut,
		others: 16 - len(onCut), board: newSlotBoard()}
}

// startOn starts worker name (one thread, a 2 s lease) on b, stopped when
// the test ends.
func (c *oneMasterCut) startOn(name string, b testenv.Backend) *testWorker {
	return startWorker(c.t, b, c.ns, name, c.board, 1, 2*time.Second)
}

// begin starts worker a on b, waits until it holds every slot, and cuts
// the master off.
func (c *oneMasterCut) begin(b testenv.Backend) {
	c.startOn("a", b)
	waitFor(c.t, c.board, 10*time.Second, "a holds every slot", func() bool { return c.board.count("a") == 16 })
	c.p.Cut()
}

// holdsOff counts the slots w holds (a valid lease) off the cut master.
func (c *oneMasterCut) holdsOff(w string) (n int) {
	c.board.mu.Lock()
	defer c.board.mu.Unlock()
	for s, ws := range c.board.holders {
		if l := ws[w]; l != nil && l.Valid() && !c.onCut[s] {
			n++
		}
	}
	return n
}

// A worker that joins while one Cluster master is cut off from it claims
// the slots assigned to it there in vain, and holds those of the other
// masters all the same, beyond its lease's TTL: a claim that fails on one
// master does not keep its leases from being extended. No worker declines
// anything here, so this is the window before a decline, or a master that
// every worker declines (a master down), which the assignment then ignores.
func TestRedisCoordinatorJoinWithAMasterCutOffServesTheOthers(t *testing.T) {
	t.Parallel()
	c := newOneMasterCut(t)
	c.begin(c.b)
	c.startOn("b", c.via)
	waitFor(t, c.board, 15*time.Second, "b holds its share off the cut master", func() bool {
		return c.holdsOff("b") > 0 && c.holdsOff("a")+c.holdsOff("b") == c.others
	})
	share := c.holdsOff("b")
	lapsed := holdsFor(c.board, 5*time.Second, func() bool { return c.holdsOff("b") == share })
	t.Logf("b held %d slots off the cut master, without them for %v of 5 s", share, lapsed.Round(time.Millisecond))
	assert.Zero(t, lapsed, "b let its slots off the cut master lapse while its claims on the cut master failed")
	assert.Zero(t, c.board.overlap.Load(), "two valid leases of one slot")

	c.p.Heal()
	waitFor(t, c.board, 20*time.Second, "b holds its whole share once healed", func() bool { return c.board.count("b") == 8 })
}

// holdsFor checks cond every 2 ms for d (checking the board for overlaps
// meanwhile) and returns how long it was false.
func holdsFor(board *slotBoard, d time.Duration, cond func() bool) time.Duration {
	var off time.Duration
	for end := time.Now().Add(d); time.Now().Before(end); {
		board.check()
		at, ok := time.Now(), cond()
		time.Sleep(2 * time.Millisecond)
		if !ok {
			off += time.Since(at)
		}
	}
	return off
}
