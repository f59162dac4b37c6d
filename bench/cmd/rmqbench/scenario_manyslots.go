package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"runtime/debug"
	"time"

	"github.com/rmq-go/rmq"
)

// Many slots: one RMQ client subscribed to 100 FixedTime topics of 256 slots
// each, all empty, on the single server and (with -cluster) on the Cluster.
// We time its start-up (Start until it holds every slot) and its Close at
// the end, and watch an idle window between: the commands Redis runs (INFO
// commandstats, Lua-internal ones included) and those the client sends (a
// go-redis hook), Redis CPU, the client's memory, and the lateness of
// FixedTime messages sent meanwhile to random topics.

const (
	vManyRMQ        = "RMQ"
	vManyRMQCluster = "RMQ, Cluster"

	manyWarmup    = 5 * time.Second // after every slot is held: the start wakes each slot once
	manyAheadMin  = 100 * time.Millisecond
	manyAheadSpan = 900 * time.Millisecond
	manyWait      = 10 * time.Second // after the window, for the last messages

	mStartup       = "startup_s"
	mClose         = "close_s"
	mSlotsHeld     = "slots_held_at_end"
	mScriptPerSec  = "script_internal_cmds_per_s"
	mHeapInUse     = "heap_inuse_bytes"
	mHeapDelta     = "heap_inuse_delta_bytes"
	mRSS           = "rss_bytes"
	mRSSDelta      = "rss_delta_bytes"
	mWindowRedisCP = "redis_cpu_share"
	mWindowClient  = "client_cpu_share"
)

var manySlotsScenario = &scenario{
	key: "manyslots",
	variants: func(cfg *config) []variant {
		vs := []variant{{"rmq", vManyRMQ, manySlotsRMQ}}
		if len(cfg.clusterAddrs) > 0 {
			vs = append(vs, variant{"rmq", vManyRMQCluster, clusterRun(manySlotsRMQ)})
		}
		return vs
	},
	report: reportManySlots,
}

func manyTopicName(i int) string { return fmt.Sprintf("many%03d", i) }

func manySlotsRMQ(ctx context.Context, e *env) (metrics, error) {
	debug.FreeOSMemory()
	heap0, rss0 := heapInUse(), processRSS()
	var workerCmds, producerCmds countHook
	w, err := openRMQ(e, &workerCmds)
	if err != nil {
		return nil, err
	}
	// The producer goes through go-redis pipelines, so that its hook sees
	// every command it sends (plain ZADDs and PUBLISHes, no script).
	p, err := openRMQ(e, &producerCmds, rmq.WithSendStream(false))
	if err != nil {
		return nil, errors.Join(err, w.close())
	}
	closeAll := func(err error) error { return errors.Join(err, p.close(), w.close()) }
	due := make([]time.Time, e.manyMessages)
	l := newLateness(due)
	listener := rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
		l.record(m.Content, time.Now())
		return nil
	})
	var subOpts []rmq.SubscribeOption
	if e.manyThreads > 0 {
		subOpts = append(subOpts, rmq.WithThreads(e.manyThreads))
	}
	for i := range e.manyTopics {
		if err := w.define(ctx, manyTopicName(i), e.manySlots, rmq.FixedTime); err != nil {
			return nil, closeAll(err)
		}
		if err := w.c.Subscribe(manyTopicName(i), listener, subOpts...); err != nil {
			return nil, closeAll(err)
		}
	}
	total := e.manyTopics * e.manySlots
	begin := time.Now()
	w.start()
	if err := waitOwned(ctx, w, total); err != nil {
		return nil, closeAll(err)
	}
	m := metrics{mStartup: time.Since(begin).Seconds()}
	log.Printf("    manyslots: %s slots held %.1fs after Start", thousands(int64(total)), m[mStartup])
	select {
	case <-time.After(manyWarmup):
	case <-ctx.Done():
		return nil, closeAll(ctx.Err())
	}

	servers := &meter{e: e} // the single server, or every node of the Cluster
	before, err := servers.commandStats(ctx)
	if err != nil {
		return nil, closeAll(err)
	}
	cpu0, _, err := servers.redisCPU(ctx)
	if err != nil {
		return nil, closeAll(err)
	}
	w0, p0 := workerCmds.n.Load(), producerCmds.n.Load()
	client0 := processCPU()
	start := time.Now()
	if err := sendSpread(ctx, e, p, l, start); err != nil {
		return nil, closeAll(err)
	}
	time.Sleep(time.Until(start.Add(e.manyWindow)))
	client1 := processCPU()
	after, err := servers.commandStats(ctx)
	elapsed := time.Since(start).Seconds()
	if err != nil {
		return nil, closeAll(err)
	}
	cpu1, _, err := servers.redisCPU(ctx)
	if err != nil {
		return nil, closeAll(err)
	}
	m[mRSS], m[mHeapInUse] = float64(processRSS()), float64(heapInUse())
	m[mRSSDelta], m[mHeapDelta] = m[mRSS]-float64(rss0), m[mHeapInUse]-float64(heap0)

	delta := statsDelta(before, after)
	logTopCommands(delta, time.Duration(elapsed*float64(time.Second)))
	var server float64
	for name, st := range delta {
		if name != "info" { // our own measurement
			server += float64(st.Calls)
		}
	}
	worker, producer := float64(workerCmds.n.Load()-w0), float64(producerCmds.n.Load()-p0)
	server -= producer
	m[mServerPerSec] = server / elapsed
	m[mServerPerSlot] = server / elapsed / float64(total)
	m[mIssuedPerSec] = worker / elapsed
	m[mIssuedPerSlot] = worker / elapsed / float64(total)
	m[mScriptPerSec] = (server - worker) / elapsed
	m[mWindowRedisCP] = (cpu1 - cpu0) / elapsed
	m[mWindowClient] = (client1 - client0) / elapsed

	select {
	case <-l.done:
	case <-time.After(manyWait):
	case <-ctx.Done():
	}
	m[mSlotsHeld] = float64(ownedSlots(w))
	for k, v := range l.metrics() {
		m[k] = v
	}
	if m[mMissing] > 0 {
		return m, closeAll(fmt.Errorf("%v of %d messages sent while idle were not delivered", m[mMissing], e.manyMessages))
	}
	// Close: what a rolling restart waits for, every lease revoked and every
	// slot's record handed back.
	closing := time.Now()
	werr := w.close()
	m[mClose] = time.Since(closing).Seconds()
	return m, errors.Join(werr, p.close())
}

// sendSpread sends e.manyMessages FixedTime messages spread evenly over the
// window from start, each to a random topic and due 100–1000 ms after its
// send, recording the due times in l.
func sendSpread(ctx context.Context, e *env, p *rmqSystem, l *lateness, start time.Time) error {
	rng := rand.New(rand.NewPCG(uint64(e.round), 0x6d616e79))
	spacing := e.manyWindow / time.Duration(e.manyMessages)
	for i := range e.manyMessages {
		time.Sleep(time.Until(start.Add(time.Duration(i) * spacing)))
		ahead := manyAheadMin + time.Duration(rng.Int64N(int64(manyAheadSpan)))
		d := time.Now().Add(ahead).Truncate(time.Millisecond)
		l.mu.Lock()
		l.due[i] = d
		l.mu.Unlock()
		msg := rmq.FixedTimeMessage{Topic: manyTopicName(rng.IntN(e.manyTopics)), Content: payload("l", i), FixedTime: d}
		if err := p.c.Producer().Send(ctx, msg); err != nil {
			return err
		}
	}
	return nil
}

// ownedSlots sums the slots the client holds now over its topics (its public
// TopicMetrics).
func ownedSlots(s *rmqSystem) int {
	n := 0
	for _, t := range s.c.TopicMetrics() {
		n += t.OwnedSlots
	}
	return n
}

// waitOwned polls until the client holds total slots, or Start fails.
func waitOwned(ctx context.Context, s *rmqSystem, total int) error {
	for {
		if n := ownedSlots(s); n >= total {
			return nil
		}
		select {
		case err := <-s.started:
			s.started <- err // for close
			return fmt.Errorf("start returned before every slot was held: %v", err)
		case <-ctx.Done():
			return fmt.Errorf("%d of %d slots held: %w", ownedSlots(s), total, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}
