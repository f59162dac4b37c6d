// Package churn_test is the churn test: per-slot exclusivity and no message
// loss while workers come and go. Worker processes (real OS processes: the
// test binary run again with -test.run=^TestChurnWorkerProcess$ and
// churnWorkerEnv set) consume one FixedTime topic of 64 slots through a
// coordinator shared by every process, while the parent feeds it at a steady
// rate with messages whose slot basis is one of 200 keys and whose content is
// unique (key|sequence). During the run workers join, stop gracefully
// (SIGTERM → Client.Close), die by SIGKILL, and freeze with SIGSTOP past the
// session timeout before SIGCONT. Events of one coordinator alone follow (for
// ZooKeeper: its leader is killed mid-run and restarted). TestChurnPartition
// cuts one worker off from its servers while it keeps running
// (partition_test.go).
//
// The harness does not depend on the kind of coordinator: a worker process
// builds its coordinator with the factory that churnCoordEnv names (see
// coordinatorKinds), and the parent watches the assignment through the
// kind's observer. A kind needs an entry there and a top-level test running
// testChurnWorkers with it.
//
// Every listener call appends one JSON line to its worker's log (package
// internal/churn): slot, key, content, start, end, worker, and owned =
// rmq.Owned(ctx) read after end. A call that was not owned returns
// rmq.ErrNotOwner, so its message is rolled back and delivered again.
// Afterwards the parent reads the logs and checks:
//
//   - no two owned calls of one slot overlap in time;
//   - every sent message has an owned call (processed at least once);
//   - store, retry, prepare and dead of the topic end empty;
//
// and reports calls, duplicates, not-owner calls, workers' exit codes and,
// for every event, how long until every slot was served again.
//
// The top-level tests run in parallel with one another: each has its own
// namespace and worker processes, and what two of them share (the test
// servers' Redis and Cluster) none kills or freezes; the ZooKeeper ensemble
// whose leader TestChurnZooKeeper kills serves that test alone, and the Redis
// that TestChurnRedis restarts is its own. The runs inside each test stay one
// after another, so that a test run alone (-run TestChurnRedis) measures its
// events as before.
package churn_test

import (
	"context"
	"github.com/rmq-go/rmq/internal/testenv"
	"testing"
	"time"

	"github.com/rmq-go/rmq/internal/churn"
)

// Environment of a churn worker process.
const (
	churnWorkerEnv  = "RMQ_CHURN_WORKER"      // worker id ("w1", …); unset: not a worker
	churnCoordEnv   = "RMQ_CHURN_COORDINATOR" // kind of coordinator, a key of coordinatorKinds
	churnRedisEnv   = "RMQ_CHURN_REDIS"       // where the messages live: a churnDeployment
	churnNSEnv      = "RMQ_CHURN_NS"          // namespace
	churnLogEnv     = "RMQ_CHURN_LOG"         // path of the worker's call log
	churnThreadsEnv = "RMQ_CHURN_THREADS"     // consumer threads
	churnAheadEnv   = "RMQ_CHURN_LOOKAHEAD"   // WithLookahead of the subscription (a Go duration; unset: none)
	churnViaEnv     = "RMQ_CHURN_VIA"         // "node=proxy": on the Cluster, dial that node through the proxy
	// churnKeepEnv, when set in the parent's environment, names a directory
	// where the logs are kept (one subdirectory per run) instead of a
	// temporary one.
	churnKeepEnv = "RMQ_CHURN_LOGDIR"
)

// Parameters of the churn test.
const (
	churnTopic          = "churn"
	churnSlots          = 64
	churnKeys           = 200
	churnThreads        = 3
	churnRate           = 400 // messages per second
	churnTick           = 25 * time.Millisecond
	churnDue            = 50 * time.Millisecond // FixedTime: due this long after the send (must still be ahead when SendBatch validates it)
	churnSession        = 4 * time.Second       // how long a silent worker keeps its slots (ZooKeeper: the session timeout)
	churnConsumeTimeout = 3 * time.Second
	churnLookahead      = time.Second          // the lookahead of the Redis coordinator runs' workers
	churnListenerSleep  = 2 * time.Millisecond // so that SIGSTOP and SIGKILL may land mid-call
	// A message whose content is "<key>|slow-<tag>-<ms>" takes <ms>
	// milliseconds in the listener, which first logs a churnSlowMark marker:
	// the parent sends one to the slot of a worker it is about to stop, kill
	// or freeze (or before an event of the coordinator, such as killing the
	// ZooKeeper leader), and signals once the marker shows the call running,
	// so the signal surely lands mid-call.
	churnSlowTag     = "|slow-"
	churnSlowOnce    = "-once" // ending a tag: slow on the first delivery only
	churnSlowMark    = "slow-call"
	churnSlowSleep   = 1500 * time.Millisecond
	churnFreeze      = 7 * time.Second  // SIGSTOP → SIGCONT, past the session timeout
	churnSettleBound = 30 * time.Second // first assignment
	churnDrainBound  = 60 * time.Second // after the feed stops, until all is processed
	churnStopBound   = 20 * time.Second // graceful stop of a worker
)

// TestChurnZooKeeper runs the churn scenarios over the ZooKeeper coordinator:
// workers joining, stopping, crashing and freezing; then the ZooKeeper leader
// dying.
func TestChurnZooKeeper(t *testing.T) {
	t.Parallel()
	t.Run("workers", func(t *testing.T) { testChurnWorkers(t, zookeeperKind, singleRedis) })
	t.Run("zk-leader-kill", testChurnZKLeader)
}

// testChurnWorkers runs the scenario every coordinator must pass: workers
// joining, stopping gracefully, dying and freezing.
func testChurnWorkers(t *testing.T, kind coordinatorKind, deployment churnDeployment) {
	testChurnWorkersRestarting(t, kind, deployment, nil, 0)
}

// testChurnWorkersRestarting runs the churn events with workers that pop
// lookahead ahead (WithLookahead; 0: not); if srv is set (the run's private
// Redis), it also kills Redis after the thaw and restarts it after longer
// than the lease TTL.
func testChurnWorkersRestarting(t *testing.T, kind coordinatorKind, deployment churnDeployment, srv *testenv.RedisServer,
	lookahead time.Duration) {
	r := newChurnRun(t, kind, deployment)
	r.lookahead = lookahead
	r.startFeed()
	r.begin("w1", "w2", "w3", "w4", "w5", "w6")
	r.join("w7", 8*time.Second)
	r.stop("w2", 8*time.Second)
	r.kill("w3", churnSession+5*time.Second)
	r.freeze("w4", churnFreeze)
	r.thaw("w4", 8*time.Second)
	if srv != nil {
		r.restartRedis(srv, churnSession+time.Second, 12*time.Second)
	}
	r.join("w8", 8*time.Second)
	r.finish()
}

// --- the end -----------------------------------------------------------------

// finish stops the feed, waits until everything sent was processed, stops
// the remaining workers gracefully, and checks and reports.
func (r *churnRun) finish() {
	t := r.t
	sent := r.stopFeed()
	feedEnd := r.feed.stopped.UnixNano()
	t.Logf("%7.3fs  feed stopped: %d messages sent", r.since(feedEnd), len(sent))
	if r.feed.err != nil {
		t.Errorf("feed: %v", r.feed.err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Everything sent gets processed (bounded).
	var missing []string
	drainStart := time.Now()
	for {
		r.checkAlive()
		l, err := churn.ReadFiles(r.logPaths()...)
		if err != nil {
			t.Fatal(err)
		}
		if missing = churn.Missing(sent, l.Calls); len(missing) == 0 {
			break
		}
		if time.Since(drainStart) > churnDrainBound {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	drained := time.Since(drainStart)
	if len(missing) == 0 {
		t.Logf("%7.3fs  all %d messages processed, %.3fs after the feed stopped", r.since(time.Now().UnixNano()),
			len(sent), drained.Seconds())
		// Store, retry and prepare empty out too (late commits, rollbacks of not-owned calls).
		deadline := time.Now().Add(15 * time.Second)
		for {
			st, err := r.client.Stats(ctx, churnTopic)
			if err == nil && st.Pending() == 0 && st.Prepare == 0 {
				break
			}
			if time.Now().After(deadline) {
				break // reported below
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// Stop the remaining workers gracefully (stdin EOF), all at once.
	for _, w := range r.workers {
		if w.fate == "" {
			w.fate = "stdin EOF"
			_ = w.CloseStdin()
		}
	}
	for _, w := range r.workers {
		select {
		case <-w.Done():
		case <-time.After(churnStopBound):
			t.Errorf("worker %s did not stop within %v after %s", w.id, churnStopBound, w.fate)
		}
	}
	stoppedAt := time.Now().UnixNano()

	// Read everything and analyse.
	l, err := churn.ReadFiles(r.logPaths()...)
	if err != nil {
		t.Fatal(err)
	}
	r.analyse(sent, l, feedEnd, stoppedAt)
}

func (r *churnRun) logPaths() []string {
	var paths []string
	for _, w := range r.workers {
		paths = append(paths, w.logPath)
	}
	return paths
}
