package churn_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/churn"
)

// TestChurnWorkerProcess is a worker process of TestChurn. It returns at once
// unless churnWorkerEnv is set. A worker consumes until SIGTERM (or SIGINT)
// or until its stdin reaches EOF, then stops with Client.Close and exits 0.
func TestChurnWorkerProcess(t *testing.T) {
	id := os.Getenv(churnWorkerEnv)
	if id == "" {
		return
	}
	ns, logPath := os.Getenv(churnNSEnv), os.Getenv(churnLogEnv)
	threads, err := strconv.Atoi(os.Getenv(churnThreadsEnv))
	if err != nil || ns == "" || logPath == "" {
		t.Fatalf("worker %s: bad environment: ns %q log %q threads %v", id, ns, logPath, err)
	}
	kind, ok := coordinatorKinds[os.Getenv(churnCoordEnv)]
	if !ok {
		t.Fatalf("worker %s: %s=%q names no coordinator kind", id, churnCoordEnv, os.Getenv(churnCoordEnv))
	}
	b := churnDeployment(os.Getenv(churnRedisEnv)).backend(t)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	coord, err := kind.worker(t, id, logger, b.Redis)
	if err != nil {
		t.Fatalf("worker %s: %v", id, err)
	}
	opts := []rmq.Option{rmq.WithNamespace(ns), rmq.WithConsumeTimeout(churnConsumeTimeout), rmq.WithLogger(logger)}
	if coord != nil { // nil: the default options' coordinator
		opts = append(opts, rmq.WithCoordinator(coord))
	}
	c, err := rmq.New(b.Redis, opts...)
	if err != nil {
		t.Fatalf("worker %s: %v", id, err)
	}
	w, err := churn.Create(logPath)
	if err != nil {
		t.Fatalf("worker %s: %v", id, err)
	}
	defer w.Close()
	mark := func(name string) {
		if err := w.Write(churn.Record{Worker: id, Mark: name, Start: time.Now().UnixNano()}); err != nil {
			t.Errorf("worker %s: log: %v", id, err)
		}
	}

	listener := rmq.ListenerFunc(func(ctx context.Context, m *rmq.Message) error {
		start := time.Now()
		content := string(m.Content)
		if _, slow, ok := strings.Cut(content, churnSlowTag); ok {
			// The parent waits for this marker to signal the process mid-call.
			if err := w.Write(churn.Record{Slot: m.Slot, Content: content, Worker: id, Mark: churnSlowMark,
				Start: start.UnixNano()}); err != nil {
				return fmt.Errorf("churn log: %w", err)
			}
			i := strings.LastIndexByte(slow, '-')
			ms, err := strconv.Atoi(slow[i+1:])
			if err != nil {
				return fmt.Errorf("slow message %q: %w", content, err)
			}
			if m.Attempt == 1 || !strings.Contains(slow, churnSlowOnce) {
				time.Sleep(time.Duration(ms) * time.Millisecond)
			}
		} else {
			time.Sleep(churnListenerSleep)
		}
		end := time.Now() // first the end, then Owned: the guarantee is about Owned at or after end
		owned := rmq.Owned(ctx)
		key, _, _ := strings.Cut(content, "|")
		rec := churn.Record{Slot: m.Slot, Key: key, Content: content, Start: start.UnixNano(),
			End: end.UnixNano(), Worker: id, Owned: owned}
		if err := w.Write(rec); err != nil {
			return fmt.Errorf("churn log: %w", err) // unrecorded: roll back, deliver again
		}
		if !owned {
			return rmq.ErrNotOwner
		}
		return nil
	})
	var lookahead time.Duration
	if v := os.Getenv(churnAheadEnv); v != "" {
		if lookahead, err = time.ParseDuration(v); err != nil {
			t.Fatalf("worker %s: %s: %v", id, churnAheadEnv, err)
		}
	}
	if err := c.Subscribe(churnTopic, listener, rmq.WithThreads(threads), rmq.WithLookahead(lookahead)); err != nil {
		t.Fatalf("worker %s: %v", id, err)
	}

	// Stop requests: SIGTERM/SIGINT, or EOF on stdin (the parent closed it or
	// died). Stdin is read through a non-blocking duplicate so that closing it
	// ends the reader (no goroutine left for the leak check).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	eof := make(chan struct{})
	if fd, err := syscall.Dup(0); err != nil {
		t.Fatalf("worker %s: dup stdin: %v", id, err)
	} else {
		_ = syscall.SetNonblock(fd, true)
		in := os.NewFile(uintptr(fd), "stdin")
		readerDone := make(chan struct{})
		go func() {
			defer close(readerDone)
			_, _ = io.Copy(io.Discard, in)
			close(eof)
		}()
		defer func() { in.Close(); <-readerDone }()
	}

	mark(churn.MarkStart)
	logger.Info("churn worker consuming", "worker", id, "pid", os.Getpid(), "ns", ns, "coordinator", kind.name)
	started := make(chan error, 1)
	go func() { started <- c.Start(context.Background()) }()
	var why string
	select {
	case s := <-sigs:
		why = s.String()
	case <-eof:
		why = "stdin EOF"
	case err := <-started:
		if errors.Is(err, rmq.ErrNamespaceBusy) {
			logger.Info("churn worker refused", "worker", id, "why", churnBusyMark, "err", err)
			_ = c.Close(context.Background())
			return
		}
		t.Errorf("worker %s: Start returned before any stop was asked: %v", id, err)
		return
	}
	mark(churn.MarkStopping)
	logger.Info("churn worker stopping", "worker", id, "why", why)
	closeCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := c.Close(closeCtx); err != nil {
		t.Errorf("worker %s: Close: %v", id, err)
	}
	if err := <-started; err != nil {
		t.Errorf("worker %s: Start: %v", id, err)
	}
	mark(churn.MarkStopped)
	logger.Info("churn worker stopped", "worker", id)
}
