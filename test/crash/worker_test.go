package crash_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/childproc"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Environment of a crash worker process.
const (
	crashWorkerEnv  = "RMQ_CRASH_WORKER"  // worker id (1, 2, …); unset: not a worker
	crashBackendEnv = "RMQ_CRASH_BACKEND" // "redis" or "cluster"
	crashNSEnv      = "RMQ_CRASH_NS"      // namespace
	crashTopicEnv   = "RMQ_CRASH_TOPIC"   // topic to consume (defined by the parent)
	crashTimeoutEnv = "RMQ_CRASH_TIMEOUT" // consume timeout, time.ParseDuration
	crashThreadsEnv = "RMQ_CRASH_THREADS" // consumer threads
	crashDelayEnv   = "RMQ_CRASH_DELAY"   // listener sleep per message, time.ParseDuration
	crashBatchEnv   = "RMQ_CRASH_BATCH"   // batch size (rmq.WithBatchSize)
	crashHoldEnv    = "RMQ_CRASH_HOLD"    // a content whose listener blocks until the process dies
)

// TestCrashHelperProcess is the consumer process of TestCrash. It returns at
// once unless crashWorkerEnv is set.
func TestCrashHelperProcess(t *testing.T) {
	id := os.Getenv(crashWorkerEnv)
	if id == "" {
		return
	}
	worker, err := strconv.Atoi(id)
	if err != nil {
		t.Fatalf("%s=%q: %v", crashWorkerEnv, id, err)
	}
	timeout, err1 := time.ParseDuration(os.Getenv(crashTimeoutEnv))
	delay, err2 := time.ParseDuration(os.Getenv(crashDelayEnv))
	threads, err3 := strconv.Atoi(os.Getenv(crashThreadsEnv))
	batch, err4 := strconv.Atoi(os.Getenv(crashBatchEnv))
	hold := os.Getenv(crashHoldEnv)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		t.Fatalf("worker %d: bad environment: %v", worker, err)
	}
	var b testenv.Backend
	switch os.Getenv(crashBackendEnv) {
	case "redis":
		b = testenv.Single(t)
	case "cluster":
		b = testenv.Cluster(t)
	default:
		t.Fatalf("worker %d: %s=%q", worker, crashBackendEnv, os.Getenv(crashBackendEnv))
	}
	ns, topic := os.Getenv(crashNSEnv), os.Getenv(crashTopicEnv)
	deliveries, inflight := crashDeliveriesKey(ns), crashInflightKey(ns, worker)

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithConsumeTimeout(timeout),
		rmq.WithBatchSize(batch), rmq.WithLogger(logger))
	if err != nil {
		t.Fatalf("worker %d: %v", worker, err)
	}
	listener := rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		content := string(m.Content)
		if err := b.Redis.HSet(ctx, inflight, content, m.Attempt).Err(); err != nil {
			return err
		}
		if content == hold { // mid-listener for sure when the parent kills us
			<-ctx.Done()
			return ctx.Err()
		}
		time.Sleep(delay)
		// Record the delivery; an error rolls the message back (retried), so a
		// message is never committed unrecorded.
		_, err := b.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HIncrBy(ctx, deliveries, content, 1)
			p.HDel(ctx, inflight, content)
			return nil
		})
		return err
	})
	if err := c.Subscribe(topic, listener, rmq.WithThreads(threads)); err != nil {
		t.Fatalf("worker %d: %v", worker, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // stdin EOF: the parent asks us to stop, or it is gone
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	logger.Info("crash worker consuming", "worker", worker, "ns", ns, "topic", topic, "pid", os.Getpid())
	if err := c.Start(ctx); err != nil {
		t.Fatalf("worker %d: Start: %v", worker, err)
	}
	closeCtx, cancelClose := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelClose()
	if err := c.Close(closeCtx); err != nil {
		t.Fatalf("worker %d: Close: %v", worker, err)
	}
	logger.Info("crash worker stopped", "worker", worker)
}

// crashWorker is a worker process started by the parent test.
type crashWorker struct {
	*childproc.Process
	id int
}

// startCrashWorker starts worker id; its listener blocks on content hold
// (none if empty).
func startCrashWorker(t *testing.T, b testenv.Backend, ns string, id int, hold string) *crashWorker {
	t.Helper()
	p := childproc.Start(t, fmt.Sprintf("worker %d", id), "TestCrashHelperProcess",
		filepath.Join(t.TempDir(), fmt.Sprintf("worker-%d.log", id)),
		crashWorkerEnv+"="+strconv.Itoa(id),
		crashBackendEnv+"="+b.Name,
		crashNSEnv+"="+ns,
		crashTopicEnv+"="+crashTopic,
		crashTimeoutEnv+"="+crashTimeout.String(),
		crashThreadsEnv+"="+strconv.Itoa(crashThreads),
		crashDelayEnv+"="+crashDelay.String(),
		crashBatchEnv+"="+strconv.Itoa(crashBatch),
		crashHoldEnv+"="+hold,
		"RMQ_REDIS_ADDR="+os.Getenv("RMQ_REDIS_ADDR"),
		"RMQ_CLUSTER_ADDRS="+os.Getenv("RMQ_CLUSTER_ADDRS"),
	)
	return &crashWorker{Process: p, id: id}
}

// kill sends SIGKILL and reaps the process; it must not have exited before.
func (w *crashWorker) kill(t *testing.T) {
	t.Helper()
	if w.Exited() {
		t.Fatalf("worker %d exited before the kill: %v", w.id, w.Err())
	}
	if err := w.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker %d: %v", w.id, err)
	}
	<-w.Done()
	if !w.KilledBySIGKILL() {
		t.Fatalf("worker %d ended with %v, not by our SIGKILL", w.id, w.Err())
	}
}

// stop asks the worker to stop gracefully and waits for a clean exit.
func (w *crashWorker) stop(t *testing.T, within time.Duration) {
	t.Helper()
	_ = w.CloseStdin()
	select {
	case <-w.Done():
	case <-time.After(within):
		t.Fatalf("worker %d did not stop within %v", w.id, within)
	}
	if err := w.Err(); err != nil {
		t.Fatalf("worker %d exited with %v", w.id, err)
	}
}

// checkOutput fails t if the worker's output has a race report, a panic or
// an error logged by the library.
func (w *crashWorker) checkOutput(t *testing.T) {
	t.Helper()
	for _, bad := range w.OutputProblems() {
		t.Errorf("worker %d output has %q", w.id, bad)
	}
}

// crashWaitFor polls cond every interval until it holds, failing t after
// within (with cond's last status) or as soon as a watched worker exits.
func crashWaitFor(t *testing.T, what string, within, interval time.Duration, cond func() (bool, string, error), watch ...*crashWorker) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		ok, status, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		for _, w := range watch {
			if w.Exited() {
				t.Fatalf("waiting for %s (%s): worker %d exited: %v", what, status, w.id, w.Err())
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not after %v (%s)", what, within, status)
		}
		time.Sleep(interval)
	}
}
