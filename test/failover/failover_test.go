// Package failover_test proves how RMQ survives a Redis failover. A master of
// a private Redis Cluster or Sentinel deployment (internal/testenv) is killed
// with SIGKILL while 8 producers send 2,500 messages/s spread evenly over the
// 16 slots of a Priority topic and one consumer delivers them. The run goes
// on until 6 s after the replica's promotion, then drains, and reports (with
// -v) a timeline, each slot's recovery after the promotion, and what was
// acknowledged, delivered, duplicated and lost.
//
// It checks that every slot sends and delivers again within 2 s of the
// promotion, that the slots whose master did not die keep 80 % of their
// delivery rate meanwhile and in the 6 s after the promotion, and that
// every message acknowledged after the promotion is delivered. A Cluster with cluster-require-full-coverage yes
// (Redis's default) refuses every command from when the dead master is
// marked failed until the promotion, so there the survivors' rate is only
// reported, with the span in which the surviving masters reported
// cluster_state:fail (polled every 20 ms). The replica-ack variant (rmq.WithReplicaAck)
// restarts the killed node as a replica 2 s after the promotion, holds the
// dead master's slots to acknowledged Sends within 2 s of that replica being
// in sync instead, and checks that no acknowledged message is lost at all.
// Duplicates are counted, never forbidden.
//
// The servers are the test's own, on loopback ports of their own; with
// -short the tests skip, and where servers are required (CI=true or
// RMQ_REQUIRE_SERVERS=1) a missing redis-server fails them.
package failover_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
)

// Parameters of a failover run.
const (
	topicName      = "failover"
	topicSlots     = 16
	producers      = 8
	sendRate       = 2500 // messages per second, all producers together
	sendTimeout    = 2 * time.Second
	maxInFlight    = 1024 // Sends in flight per producer: more than sendRate×sendTimeout in all
	consumeThreads = 4
	consumeTimeout = 3 * time.Second

	killAfter         = 2 * time.Second // from the first send
	runAfterPromotion = 6 * time.Second // sending goes on this long after the promotion
	drainLimit        = 20 * time.Second
	drainIdle         = 6 * time.Second // the drain ends after this long without progress

	recoveryBound = 2 * time.Second // each slot sends and delivers again within this of the promotion
	keptRate      = 0.8             // share of its pre-kill rate a surviving group keeps
	rowWidth      = 500 * time.Millisecond
)

// replicaAckTimeout is the WAIT timeout of the replica-ack variant.
const replicaAckTimeout = 500 * time.Millisecond

// deployment is what a run needs of the Redis deployment under test.
type deployment struct {
	name      string
	newClient func() redis.UniversalClient // a fresh client of the deployment
	// slotMaster names each topic slot's master at the start (the address of
	// its keys' master; the same for all slots on Sentinel).
	slotMaster [topicSlots]string
	victim     string // the master killed
	kill       func(t testing.TB)
	promotion  func(ctx context.Context) (time.Time, string, error)
	rejoin     func(t testing.TB, newMaster string) // restarts the killed node, to serve as a replica again
	notes      []string                             // what the report says about the deployment
	// stateNodes are Cluster nodes whose cluster_state is polled from just
	// before the kill until the producers stop (see stateWatch).
	stateNodes []string
	// refusesUncovered: the deployment refuses every command while some slot
	// has no master (a Cluster with cluster-require-full-coverage yes), so
	// the surviving slots' delivery rate from the kill to the promotion is
	// reported, not checked.
	refusesUncovered bool
}

// variant is how the producer's client is made.
type variant struct {
	// replicaAck: the producer's client is made WithReplicaAck(1,
	// replicaAckTimeout), and the killed node is restarted recoveryBound after
	// the promotion, so that the new master gets a replica to acknowledge
	// (see rejoin).
	replicaAck bool
	// replicaReads: every process's Cluster client sends its read-only
	// commands to replicas (RouteRandomly), as read-scaling deployments
	// do; the killed master's replica serves them until its promotion.
	replicaReads bool
}

// failoverRun is one run: the deployment, the records and the moments that
// matter, as offsets from t0, the first send.
type failoverRun struct {
	t       *testing.T
	d       deployment
	v       variant
	ns      string
	bases   [topicSlots]string
	rec     *recorder
	t0      time.Time
	killed  time.Duration
	promote time.Duration // when the promotion was seen (the end of the run if never)
	stopped time.Duration // when the producers stopped
	drained time.Duration // when the drain ended
	newAddr string        // the promoted replica
	// replicaOnline is when the killed node, restarted, was an online replica
	// of the new master (replica-ack variant; never if not seen).
	replicaOnline time.Duration
	steal         int64         // CPU steal during the run, jiffies
	states        clusterStates // what the watches of d.stateNodes saw
	notes         []string      // events worth a line in the report
}

// newNamespace returns a namespace of the test's own.
func newNamespace() string {
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "failover-" + hex.EncodeToString(r[:])
}

// runFailover runs the failover scenario on d and checks its outcome.
func runFailover(t *testing.T, ns string, d deployment, v variant) {
	r := &failoverRun{t: t, d: d, v: v, ns: ns, bases: slotBases(), rec: newRecorder(), replicaOnline: never}
	prodRedis, consRedis := d.newClient(), d.newClient()
	t.Cleanup(func() { _ = prodRedis.Close(); _ = consRedis.Close() })

	opts := []rmq.Option{rmq.WithNamespace(ns)}
	if v.replicaAck {
		opts = append(opts, rmq.WithReplicaAck(1, replicaAckTimeout))
	}
	prod, err := rmq.New(prodRedis, opts...)
	require.NoError(t, err)
	cons, err := rmq.New(consRedis, rmq.WithNamespace(ns), rmq.WithConsumeTimeout(consumeTimeout))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	require.NoError(t, prod.DefineTopic(ctx, rmq.Topic{Name: topicName, SlotAmount: topicSlots, Type: rmq.Priority}))
	require.NoError(t, cons.Subscribe(topicName, rmq.ListenerFunc(r.listen), rmq.WithThreads(consumeThreads)))
	consCtx, stopConsumer := context.WithCancel(context.Background())
	defer stopConsumer()
	consDone := make(chan error, 1)
	go func() { consDone <- cons.Start(consCtx) }()
	r.warmUp(ctx, prod)

	stealBefore := cpuSteal()
	r.t0 = time.Now()
	prodCtx, stopProducers := context.WithCancel(context.Background())
	defer stopProducers()
	var seq atomic.Int64
	var wg sync.WaitGroup
	for id := range producers {
		wg.Go(func() { r.produce(prodCtx, prod.Producer(), id, &seq) })
	}

	time.Sleep(time.Until(r.t0.Add(killAfter)))
	stopStateWatches := r.startStateWatches(d.stateNodes)
	d.kill(t)
	r.killed = time.Since(r.t0)
	promoCtx, promoCancel := context.WithTimeout(ctx, 40*time.Second)
	at, addr, err := d.promotion(promoCtx)
	promoCancel()
	if err != nil {
		t.Errorf("no promotion seen: %v", err)
		at = time.Now()
	}
	r.promote, r.newAddr = at.Sub(r.t0), addr
	var watch *replicaWatch
	if v.replicaAck && d.rejoin != nil {
		watch = r.rejoin(at)
	}
	time.Sleep(time.Until(at.Add(runAfterPromotion)))
	if watch != nil {
		r.awaitRejoined(watch, at)
	}
	stopProducers()
	wg.Wait()
	r.stopped = time.Since(r.t0)
	r.states = stopStateWatches()
	r.drain()
	r.drained = time.Since(r.t0)
	r.steal = cpuSteal() - stealBefore

	stopConsumer()
	select {
	case err := <-consDone:
		if err != nil && !errors.Is(err, context.Canceled) {
			r.notes = append(r.notes, "consumer Start returned: "+err.Error())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("the consumer's Start did not return within 20 s of its context's end")
	}
	closeCtx, closeCancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer closeCancel()
	if err := cons.Close(closeCtx); err != nil {
		r.notes = append(r.notes, "consumer Close: "+err.Error())
	}
	if err := prod.Close(closeCtx); err != nil {
		r.notes = append(r.notes, "producer Close: "+err.Error())
	}

	rep := r.analyse()
	r.report(rep)
	r.check(rep)
}

// listen is the consumer's listener: it records each delivery of a message
// of the run and each warm-up message's slot.
func (r *failoverRun) listen(_ context.Context, m *rmq.Message) error {
	now := time.Now()
	c := string(m.Content)
	switch {
	case strings.HasPrefix(c, "m:"):
		if n, ok := seqOf(c); ok {
			r.rec.delivered(deliveryRecord{seq: n, slot: m.Slot, at: now})
		}
	case strings.HasPrefix(c, "warm:"):
		r.rec.warmDelivered(m.Slot)
	}
	return nil
}

// warmUp sends one message to every slot and waits until the consumer has
// delivered each, so the run starts with every slot served.
func (r *failoverRun) warmUp(ctx context.Context, c *rmq.Client) {
	for i, b := range r.bases {
		require.NoError(r.t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: topicName,
			Content: []byte("warm:" + b), Priority: 100, SlotBasis: b}), "warm-up send to slot %d", i)
	}
	require.Eventually(r.t, func() bool { return r.rec.warmSlots() == topicSlots }, 30*time.Second,
		20*time.Millisecond, "the consumer delivers a warm-up message in every slot")
}

// drain waits until every acknowledged message was delivered, or no more
// were for drainIdle, or drainLimit passed.
func (r *failoverRun) drain() {
	start := time.Now()
	lastDone, lastProgress := -1, start
	for time.Since(start) < drainLimit {
		missing, done := r.rec.undelivered()
		if missing == 0 {
			return
		}
		if done != lastDone {
			lastDone, lastProgress = done, time.Now()
		} else if time.Since(lastProgress) > drainIdle {
			r.notes = append(r.notes, "drain gave up: no progress for "+drainIdle.String())
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.notes = append(r.notes, "drain gave up after "+drainLimit.String())
}
