package rmq_test

// Churn test: per-slot exclusivity and no message loss while workers come and
// go. Worker processes (real OS processes: the test binary run again with
// -test.run=^TestChurnWorkerProcess$ and churnWorkerEnv set) consume one
// FixedTime topic of 64 slots through the ZooKeeper coordinator, while the
// parent feeds it at a steady rate with messages whose slot basis is one of
// 200 keys and whose content is unique (key|sequence). During the run workers
// join, stop gracefully (SIGTERM → Client.Close), die by SIGKILL, and freeze
// with SIGSTOP past the session timeout before SIGCONT. A second run kills
// the ZooKeeper leader mid-run and restarts it.
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

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/churn"
	"github.com/rmq-go/rmq/internal/testenv"
)

// Environment of a churn worker process.
const (
	churnWorkerEnv  = "RMQ_CHURN_WORKER"  // worker id ("w1", …); unset: not a worker
	churnNSEnv      = "RMQ_CHURN_NS"      // namespace
	churnLogEnv     = "RMQ_CHURN_LOG"     // path of the worker's call log
	churnThreadsEnv = "RMQ_CHURN_THREADS" // consumer threads
	// churnKeepEnv, when set in the parent's environment, names a directory
	// where the logs are kept (one subdirectory per run) instead of a
	// temporary one.
	churnKeepEnv = "RMQ_CHURN_LOGDIR"
)

// Parameters of the churn test.
const (
	churnRoot           = "/rmq-churn"
	churnTopic          = "churn"
	churnSlots          = 64
	churnKeys           = 200
	churnThreads        = 3
	churnRate           = 400 // messages per second
	churnTick           = 25 * time.Millisecond
	churnDue            = 50 * time.Millisecond // FixedTime: due this long after the send (must still be ahead when SendBatch validates it)
	churnSession        = 4 * time.Second
	churnConsumeTimeout = 3 * time.Second
	churnListenerSleep  = 2 * time.Millisecond // so that SIGSTOP and SIGKILL may land mid-call
	// A message whose content is "<key>|slow-<tag>-<ms>" takes <ms>
	// milliseconds in the listener, which first logs a churnSlowMark marker:
	// the parent sends one to the slot of a worker it is about to stop, kill
	// or freeze (or before it kills the ZooKeeper leader), and signals once
	// the marker shows the call running, so the signal surely lands mid-call.
	churnSlowTag   = "|slow-"
	churnSlowMark  = "slow-call"
	churnSlowSleep = 1500 * time.Millisecond
	// churnSlowZK is shorter: the call only has to straddle the sessions'
	// suspension (within milliseconds of the kill), and its thread's other
	// slots wait for it, which would show in the measured pause.
	churnSlowZK      = 300 * time.Millisecond
	churnFreeze      = 7 * time.Second  // SIGSTOP → SIGCONT, past the session timeout
	churnSettleBound = 30 * time.Second // first assignment
	churnDrainBound  = 60 * time.Second // after the feed stops, until all is processed
	churnStopBound   = 20 * time.Second // graceful stop of a worker
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
	b := testenv.Single(t)
	servers := testenv.ZooKeeper(t)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	z, err := coordinator.NewZooKeeper(coordinator.ZooKeeperConfig{Servers: servers, SessionTimeout: churnSession,
		Root: churnRoot, WorkerID: id, Logger: logger})
	if err != nil {
		t.Fatalf("worker %s: %v", id, err)
	}
	defer z.Close()
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithCoordinator(z),
		rmq.WithConsumeTimeout(churnConsumeTimeout), rmq.WithLogger(logger))
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
			time.Sleep(time.Duration(ms) * time.Millisecond)
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
	if err := c.Subscribe(churnTopic, listener, rmq.WithThreads(threads)); err != nil {
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
	logger.Info("churn worker consuming", "worker", id, "pid", os.Getpid(), "ns", ns)
	started := make(chan error, 1)
	go func() { started <- c.Start(context.Background()) }()
	var why string
	select {
	case s := <-sigs:
		why = s.String()
	case <-eof:
		why = "stdin EOF"
	case err := <-started:
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

// TestChurn runs the churn scenarios: workers joining, stopping, crashing and
// freezing; then the ZooKeeper leader dying.
func TestChurn(t *testing.T) {
	t.Run("workers", testChurnWorkers)
	t.Run("zk-leader-kill", testChurnZKLeader)
}

func testChurnWorkers(t *testing.T) {
	r := newChurnRun(t)
	r.startFeed()
	r.begin("w1", "w2", "w3", "w4", "w5", "w6")
	r.join("w7", 8*time.Second)
	r.stop("w2", 8*time.Second)
	r.kill("w3", churnSession+5*time.Second)
	r.freeze("w4", churnFreeze)
	r.thaw("w4", 8*time.Second)
	r.join("w8", 8*time.Second)
	r.finish()
}

func testChurnZKLeader(t *testing.T) {
	dir, script := os.Getenv("RMQ_SERVERS_DIR"), os.Getenv("RMQ_SERVERS_SCRIPT")
	if dir == "" {
		testenv.Missing(t, "RMQ_SERVERS_DIR")
	}
	if script == "" {
		testenv.Missing(t, "RMQ_SERVERS_SCRIPT")
	}
	r := newChurnRun(t)
	r.checkEnsemble()
	r.startFeed()
	r.begin("w1", "w2", "w3", "w4", "w5", "w6")
	n := r.killZKLeader(dir, script, 12*time.Second)
	r.restartZK(dir, script, n, 6*time.Second)
	r.kill("w3", churnSession+5*time.Second)
	r.finish()
}

// churnRun is one scenario: its namespace, workers, feed and events.
type churnRun struct {
	t       *testing.T
	b       testenv.Backend
	servers []string
	ns      string
	dir     string
	client  *rmq.Client
	admin   *coordinator.ZooKeeper
	keys    []string // feed order: consecutive keys are in different slots
	resStep time.Duration
	t0      time.Time // when the feed started

	workers []*churnWorker
	events  []*churnEvent
	feed    churnFeed
	zkDown  int      // a ZooKeeper node this run killed and has not restarted yet
	slow    []string // slow messages sent for mid-call signals
}

// churnEvent is one change during a run.
type churnEvent struct {
	churn.Event
	live []string // workers that should hold slots once it settles
	// zkSettled is when ZooKeeper showed every slot held by its assigned
	// owner among live (Unix ns; 0: not before the next event).
	zkSettled int64
	joined    string // for a join: the worker, whose start marker replaces At
	note      string
}

func newChurnRun(t *testing.T) *churnRun {
	b := testenv.Single(t)
	servers := testenv.ZooKeeper(t)
	r := &churnRun{t: t, b: b, servers: servers, ns: testenv.Namespace(t, b)}
	r.dir = t.TempDir()
	if keep := os.Getenv(churnKeepEnv); keep != "" {
		r.dir = filepath.Join(keep, r.ns)
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("logs kept in %s", r.dir)
	}
	admin, err := coordinator.NewZooKeeper(coordinator.ZooKeeperConfig{Servers: servers,
		SessionTimeout: churnSession, Root: churnRoot})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	r.admin = admin
	c, err := rmq.New(b.Redis, rmq.WithNamespace(r.ns), rmq.WithCoordinator(admin))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	r.client = c
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.DefineTopic(ctx, rmq.Topic{Name: churnTopic, SlotAmount: churnSlots, Type: rmq.FixedTime}); err != nil {
		t.Fatal(err)
	}
	r.keys, r.resStep = churnKeyOrder()
	return r
}

// churnKeyOrder picks churnKeys slot bases spread evenly over the slots (3
// or 4 per slot) and orders them so that the feed cycles through the slots:
// every slot gets a message at least every resolution.
func churnKeyOrder() (order []string, resolution time.Duration) {
	buckets := make([][]string, churnSlots)
	per, extra := churnKeys/churnSlots, churnKeys%churnSlots
	for i, n := 0, 0; n < churnKeys; i++ {
		k := fmt.Sprintf("key-%d", i)
		s := rmq.SlotIndex([]byte(k), churnSlots)
		limit := per
		if s < extra {
			limit++
		}
		if len(buckets[s]) < limit {
			buckets[s] = append(buckets[s], k)
			n++
		}
	}
	for round := 0; round <= per; round++ {
		for s := range churnSlots {
			if round < len(buckets[s]) {
				order = append(order, buckets[s][round])
			}
		}
	}
	// The longest cyclic distance between two messages of one slot.
	last, first, worst := map[int]int{}, map[int]int{}, 0
	for i, k := range order {
		s := rmq.SlotIndex([]byte(k), churnSlots)
		if j, ok := last[s]; ok {
			worst = max(worst, i-j)
		} else {
			first[s] = i
		}
		last[s] = i
	}
	for s, j := range last {
		worst = max(worst, len(order)-j+first[s])
	}
	return order, time.Duration(worst) * time.Second / churnRate
}

// --- feed --------------------------------------------------------------------

// churnFeed sends messages at churnRate until stopped.
type churnFeed struct {
	mu      sync.Mutex
	sent    []string
	err     error
	stopCh  chan struct{}
	done    chan struct{}
	stopped time.Time
}

func (r *churnRun) startFeed() {
	f := &r.feed
	f.stopCh, f.done = make(chan struct{}), make(chan struct{})
	r.t0 = time.Now()
	go func() {
		defer close(f.done)
		tick := time.NewTicker(churnTick)
		defer tick.Stop()
		seq := 0
		for {
			select {
			case <-f.stopCh:
				return
			case <-tick.C:
			}
			want := int(time.Since(r.t0).Seconds() * churnRate)
			n := min(want-seq, churnRate/2) // catch up after a stall, in bounded batches
			if n <= 0 {
				continue
			}
			now := time.Now()
			msgs := make([]rmq.OutgoingMessage, n)
			contents := make([]string, n)
			for i := range n {
				key := r.keys[(seq+i)%len(r.keys)]
				contents[i] = fmt.Sprintf("%s|%07d", key, seq+i)
				msgs[i] = rmq.FixedTimeMessage{Topic: churnTopic, Content: []byte(contents[i]),
					FixedTime: now.Add(churnDue), SlotBasis: key}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			err := r.client.Producer().SendBatch(ctx, msgs...)
			cancel()
			f.mu.Lock()
			if err != nil {
				f.err = fmt.Errorf("send of %s..%s: %w", contents[0], contents[n-1], err)
				f.mu.Unlock()
				return
			}
			f.sent = append(f.sent, contents...)
			f.mu.Unlock()
			seq += n
		}
	}()
	r.t.Cleanup(func() { r.stopFeed() })
}

// stopFeed stops the feed (once) and returns what it sent.
func (r *churnRun) stopFeed() []string {
	f := &r.feed
	f.mu.Lock()
	if f.stopped.IsZero() {
		close(f.stopCh)
		f.stopped = time.Now()
	}
	f.mu.Unlock()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// --- workers -----------------------------------------------------------------

// churnWorker is a worker process.
type churnWorker struct {
	id       string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	logPath  string // call log (JSON lines)
	errPath  string // stdout and stderr
	launched time.Time
	done     chan struct{} // closed once reaped
	err      error         // cmd.Wait's result, once done
	fate     string        // how the parent ended it: "", "SIGTERM", "SIGKILL", "stdin EOF"
}

func (w *churnWorker) exited() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (w *churnWorker) exitStatus() string {
	if !w.exited() {
		return "running"
	}
	if w.err == nil {
		return "exit 0"
	}
	return w.err.Error()
}

func (w *churnWorker) output() string {
	b, err := os.ReadFile(w.errPath)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b)
}

func (r *churnRun) worker(id string) *churnWorker {
	for _, w := range r.workers {
		if w.id == id {
			return w
		}
	}
	r.t.Fatalf("no worker %s", id)
	return nil
}

// live returns the ids of workers expected to hold slots: started, not
// ended by the parent and not frozen.
func (r *churnRun) live(frozen ...string) []string {
	var ids []string
	for _, w := range r.workers {
		if w.fate == "" && !slices.Contains(frozen, w.id) {
			ids = append(ids, w.id)
		}
	}
	return ids
}

// startWorker starts worker id. A cleanup makes sure it is gone (SIGCONT,
// then SIGKILL) and reaped when the test ends, and shows its output if the
// test failed.
func (r *churnRun) startWorker(id string) *churnWorker {
	t := r.t
	t.Helper()
	w := &churnWorker{id: id, logPath: filepath.Join(r.dir, id+".jsonl"),
		errPath: filepath.Join(r.dir, id+".stderr"), done: make(chan struct{})}
	errFile, err := os.Create(w.errPath)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close() // the child has its own descriptor
	cmd := exec.Command(os.Args[0], "-test.run=^TestChurnWorkerProcess$", "-test.count=1", "-test.timeout=10m")
	cmd.Env = append(os.Environ(),
		churnWorkerEnv+"="+id,
		churnNSEnv+"="+r.ns,
		churnLogEnv+"="+w.logPath,
		churnThreadsEnv+"="+strconv.Itoa(churnThreads),
		"RMQ_ZK_SERVERS="+strings.Join(r.servers, ","),
	)
	cmd.Stdout, cmd.Stderr = errFile, errFile
	// Should this process die without its cleanups, the child goes too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if w.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start worker %s: %v", id, err)
	}
	w.cmd, w.launched = cmd, time.Now()
	go func() {
		w.err = cmd.Wait()
		close(w.done)
	}()
	r.workers = append(r.workers, w)
	t.Cleanup(func() {
		if !w.exited() {
			_ = cmd.Process.Signal(syscall.SIGCONT) // it may be frozen
			_ = cmd.Process.Kill()
			<-w.done
		}
		_ = w.stdin.Close()
		if t.Failed() {
			out := w.output()
			if lines := strings.Split(out, "\n"); len(lines) > 300 {
				out = fmt.Sprintf("(%d lines before)\n", len(lines)-300) + strings.Join(lines[len(lines)-300:], "\n")
			}
			t.Logf("worker %s (pid %d, %s) output:\n%s", id, cmd.Process.Pid, w.exitStatus(), out)
		}
	})
	return w
}

// signal sends sig to worker w, which must still run.
func (r *churnRun) signal(w *churnWorker, sig syscall.Signal) {
	r.t.Helper()
	if w.exited() {
		r.t.Fatalf("worker %s exited before %v: %v\n%s", w.id, sig, w.err, w.output())
	}
	if err := w.cmd.Process.Signal(sig); err != nil {
		r.t.Fatalf("signal %v to worker %s: %v", sig, w.id, err)
	}
}

// --- events ------------------------------------------------------------------

// event records an event that happened at (a time.Now taken just before the
// action) and waits until pause after it, watching ZooKeeper meanwhile for
// the moment every slot is held by its assigned owner among live.
func (r *churnRun) event(at time.Time, name string, live []string, pause time.Duration, opts ...func(*churnEvent)) *churnEvent {
	ev := &churnEvent{Event: churn.Event{Name: name, At: at.UnixNano()}, live: live}
	for _, o := range opts {
		o(ev)
	}
	r.events = append(r.events, ev)
	r.t.Logf("%7.3fs  %s", r.since(ev.At), name)
	r.watch(ev, time.Unix(0, ev.At).Add(pause))
	return ev
}

// watch polls ZooKeeper until the assignment settles on ev.live or until.
func (r *churnRun) watch(ev *churnEvent, until time.Time) {
	for time.Now().Before(until) {
		if ev.zkSettled == 0 && r.zkSettled(ev.live) {
			ev.zkSettled = time.Now().UnixNano()
		}
		r.checkAlive()
		time.Sleep(min(200*time.Millisecond, time.Until(until)))
	}
}

// checkAlive fails the test if a worker the parent did not end has exited,
// or if the feed failed.
func (r *churnRun) checkAlive() {
	r.feed.mu.Lock()
	err := r.feed.err
	r.feed.mu.Unlock()
	if err != nil {
		r.t.Fatalf("feed: %v", err)
	}
	for _, w := range r.workers {
		if w.fate == "" && w.exited() {
			r.t.Fatalf("worker %s exited on its own: %v\n%s", w.id, w.err, w.output())
		}
	}
}

// zkSettled reports whether ZooKeeper shows every slot assigned to one of
// live and held by its assigned owner, and every live worker assigned slots.
func (r *churnRun) zkSettled(live []string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, slots, err := r.admin.Assignment(ctx, r.ns, churnTopic)
	if err != nil || len(slots) != churnSlots {
		return false
	}
	seen := map[string]bool{}
	for _, s := range slots {
		if s.Assigned.Worker == "" || s.Holder != s.Assigned || !slices.Contains(live, s.Assigned.Worker) {
			return false
		}
		seen[s.Assigned.Worker] = true
	}
	return len(seen) == len(live)
}

func (r *churnRun) since(ns int64) float64 { return time.Duration(ns - r.t0.UnixNano()).Seconds() }

// begin starts the first workers and waits until ZooKeeper shows the
// assignment settled.
func (r *churnRun) begin(ids ...string) {
	at := time.Now().UnixNano()
	for _, id := range ids {
		r.startWorker(id)
	}
	ev := &churnEvent{Event: churn.Event{Name: "start " + strings.Join(ids, ","), At: at}, live: ids}
	r.events = append(r.events, ev)
	r.t.Logf("%7.3fs  %s", r.since(at), ev.Name)
	deadline := time.Now().Add(churnSettleBound)
	for !r.zkSettled(ids) {
		r.checkAlive()
		if time.Now().After(deadline) {
			r.t.Fatalf("the assignment did not settle on %v within %v", ids, churnSettleBound)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ev.zkSettled = time.Now().UnixNano()
	time.Sleep(time.Second) // let every slot be served a few times
}

func (r *churnRun) join(id string, pause time.Duration) {
	at := time.Now()
	r.startWorker(id)
	r.event(at, "join "+id, r.live(), pause, func(e *churnEvent) { e.joined = id })
}

func (r *churnRun) stop(id string, pause time.Duration) {
	w := r.worker(id)
	note := r.midCall(w, "stop", churnSlowSleep)
	at := time.Now()
	r.signal(w, syscall.SIGTERM)
	w.fate = "SIGTERM"
	r.event(at, "stop "+id+" (SIGTERM)", r.live(), pause, withNote(note))
}

func (r *churnRun) kill(id string, pause time.Duration) {
	w := r.worker(id)
	note := r.midCall(w, "kill", churnSlowSleep)
	at := time.Now()
	r.signal(w, syscall.SIGKILL)
	w.fate = "SIGKILL"
	<-w.done
	r.event(at, "kill "+id+" (SIGKILL)", r.live(), pause, withNote(note))
}

func (r *churnRun) freeze(id string, pause time.Duration) {
	w := r.worker(id)
	note := r.midCall(w, "freeze", churnSlowSleep)
	at := time.Now()
	r.signal(w, syscall.SIGSTOP)
	r.event(at, "freeze "+id+" (SIGSTOP)", r.live(id), pause, withNote(note))
}

func withNote(note string) func(*churnEvent) { return func(e *churnEvent) { e.note = note } }

// midCall sends a slow message to a slot that worker w holds and waits until
// its listener runs, so that the signal that follows lands mid-call. It
// returns a note for the report.
func (r *churnRun) midCall(w *churnWorker, tag string, d time.Duration) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, slots, err := r.admin.Assignment(ctx, r.ns, churnTopic)
	if err != nil {
		return fmt.Sprintf("no mid-call message: assignment: %v", err)
	}
	slot := -1
	for _, s := range slots {
		if s.Holder.Worker == w.id && s.Assigned.Worker == w.id {
			slot = s.Slot
			break
		}
	}
	key := ""
	for _, k := range r.keys {
		if slot >= 0 && rmq.SlotIndex([]byte(k), churnSlots) == slot {
			key = k
			break
		}
	}
	if key == "" {
		return fmt.Sprintf("no mid-call message: %s holds no slot", w.id)
	}
	content := fmt.Sprintf("%s%s%s-%d", key, churnSlowTag, tag, d.Milliseconds())
	if err := r.client.Producer().Send(ctx, rmq.FixedTimeMessage{Topic: churnTopic, Content: []byte(content),
		FixedTime: time.Now().Add(churnDue), SlotBasis: key}); err != nil {
		r.t.Fatalf("send %s: %v", content, err)
	}
	r.feed.mu.Lock()
	r.feed.sent = append(r.feed.sent, content)
	r.feed.mu.Unlock()
	r.slow = append(r.slow, content)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(w.logPath); err == nil && strings.Contains(string(b), `"`+content+`"`) {
			time.Sleep(100 * time.Millisecond) // well inside the call
			return fmt.Sprintf("mid-call: %s in the listener (slot %d)", content, slot)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Sprintf("NOT mid-call: %s (slot %d) did not start within 5s", content, slot)
}

func (r *churnRun) thaw(id string, pause time.Duration) {
	at := time.Now()
	r.signal(r.worker(id), syscall.SIGCONT)
	r.event(at, "thaw "+id+" (SIGCONT)", r.live(), pause)
}

// --- ZooKeeper ensemble ------------------------------------------------------

// zkMode sends "srvr" to a ZooKeeper server and returns its Mode (leader,
// follower, standalone), or "" when it does not answer. Debian's version
// string breaks go-zookeeper's FLWSrvr, hence the parsing here.
func zkMode(addr string) string {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return ""
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("srvr")); err != nil {
		return ""
	}
	out, _ := io.ReadAll(conn)
	for _, line := range strings.Split(string(out), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "Mode:"); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// zkNode returns the node number N of a server address (client port 12180+N).
func zkNode(t *testing.T, addr string) int {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil || p-12180 < 1 || p-12180 > 3 {
		t.Fatalf("ZooKeeper server %s: not on a client port 12181..12183 of scripts/servers.sh", addr)
	}
	return p - 12180
}

// zkModes returns each server's mode.
func (r *churnRun) zkModes() map[string]string {
	modes := map[string]string{}
	for _, s := range r.servers {
		modes[s] = zkMode(s)
	}
	return modes
}

// zkLeader returns the address of the one leader, or "".
func (r *churnRun) zkLeader() string {
	leader := ""
	for s, m := range r.zkModes() {
		if m == "leader" {
			if leader != "" {
				return ""
			}
			leader = s
		}
	}
	return leader
}

// checkEnsemble fails unless all three servers serve, one of them leading.
func (r *churnRun) checkEnsemble() {
	modes := r.zkModes()
	leaders, followers := 0, 0
	for _, m := range modes {
		switch m {
		case "leader":
			leaders++
		case "follower":
			followers++
		}
	}
	if len(r.servers) != 3 || leaders != 1 || followers != 2 {
		r.t.Fatalf("the ZooKeeper ensemble is not whole before the test: %v", modes)
	}
}

// zkPID returns the PID recorded for node n, checking that it is that node's
// ZooKeeper process.
func zkPID(t *testing.T, dir string, n int) int {
	b, err := os.ReadFile(filepath.Join(dir, "pids", fmt.Sprintf("zk-%d.pid", n)))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 1 {
		t.Fatalf("zk-%d.pid holds %q", n, b)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatalf("ZooKeeper node %d (pid %d) is not running: %v", n, pid, err)
	}
	if cl := string(cmdline); !strings.Contains(cl, "QuorumPeerMain") || !strings.Contains(cl, fmt.Sprintf("/zk/%d/zoo.cfg", n)) {
		t.Fatalf("pid %d of zk-%d.pid is not ZooKeeper node %d: %q", pid, n, n, strings.ReplaceAll(cl, "\x00", " "))
	}
	return pid
}

// procGone reports whether pid has exited (gone, or a zombie).
func procGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// killZKLeader kills the ZooKeeper leader with SIGKILL and returns its node
// number. A cleanup restarts the node if the test ends before restartZK.
func (r *churnRun) killZKLeader(dir, script string, pause time.Duration) int {
	t := r.t
	leader := r.zkLeader()
	if leader == "" {
		t.Fatalf("no single ZooKeeper leader: %v", r.zkModes())
	}
	n := zkNode(t, leader)
	pid := zkPID(t, dir, n)
	// A call straddling the session suspension must end not owned.
	note := r.midCall(r.worker(r.live()[0]), "zk", churnSlowZK)
	r.zkDown = n
	t.Cleanup(func() {
		if down := r.zkDown; down != 0 {
			out, err := r.runRestart(dir, script, down)
			t.Logf("cleanup: restart of ZooKeeper node %d: err %v\n%s", down, err, out)
		}
	})
	at := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill ZooKeeper leader %d (pid %d): %v", n, pid, err)
	}
	ev := &churnEvent{Event: churn.Event{Name: fmt.Sprintf("kill zk leader (node %d)", n), At: at.UnixNano()},
		live: r.live()}
	r.events = append(r.events, ev)
	t.Logf("%7.3fs  %s, pid %d", r.since(ev.At), ev.Name, pid)
	for gone := time.Now().Add(10 * time.Second); !procGone(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(gone) {
			t.Fatalf("ZooKeeper node %d (pid %d) still runs 10s after SIGKILL", n, pid)
		}
	}
	// Note when the others elect a new leader.
	until := time.Unix(0, ev.At).Add(pause)
	for time.Now().Before(until) {
		if l := r.zkLeader(); l != "" && l != leader {
			ev.note = fmt.Sprintf("new zk leader node %d after %.3fs", zkNode(t, l), r.since(time.Now().UnixNano())-r.since(ev.At))
			t.Logf("%7.3fs  %s", r.since(time.Now().UnixNano()), ev.note)
			break
		}
		r.checkAlive()
		time.Sleep(50 * time.Millisecond)
	}
	if ev.note == "" {
		ev.note = "no new zk leader within the pause"
	}
	ev.note += "; " + note
	r.watch(ev, until)
	return n
}

func (r *churnRun) runRestart(dir, script string, n int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, script, "restart-zk", dir, strconv.Itoa(n)).CombinedOutput()
	if err == nil {
		r.zkDown = 0
	}
	return out, err
}

// restartZK restarts node n and waits until the whole ensemble serves again.
func (r *churnRun) restartZK(dir, script string, n int, pause time.Duration) {
	t := r.t
	began := time.Now()
	out, err := r.runRestart(dir, script, n)
	if err != nil {
		t.Fatalf("restart ZooKeeper node %d: %v\n%s", n, err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		modes, leaders, serving := r.zkModes(), 0, 0
		for _, m := range modes {
			if m == "leader" || m == "follower" {
				serving++
			}
			if m == "leader" {
				leaders++
			}
		}
		if serving == 3 && leaders == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ZooKeeper ensemble not whole 30s after restarting node %d: %v", n, modes)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.event(time.Now(), fmt.Sprintf("zk node %d serves again", n), r.live(), pause, func(e *churnEvent) {
		e.note = fmt.Sprintf("restart took %.3fs", time.Since(began).Seconds())
	})
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
			if err == nil && st.Store == 0 && st.Prepare == 0 {
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
			_ = w.stdin.Close()
		}
	}
	for _, w := range r.workers {
		select {
		case <-w.done:
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

func (r *churnRun) analyse(sent []string, l churn.Log, feedEnd, stoppedAt int64) {
	t := r.t
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Calls are about messages that were sent, in the slot of their key.
	if u := churn.Unexpected(sent, l.Calls); len(u) > 0 {
		t.Errorf("%d contents in the logs were never sent, e.g. %q", len(u), u[:min(len(u), 10)])
	}
	wrongSlot := 0
	for _, c := range l.Calls {
		if key, _, _ := strings.Cut(c.Content, "|"); key != c.Key || rmq.SlotIndex([]byte(key), churnSlots) != c.Slot {
			if wrongSlot++; wrongSlot <= 5 {
				t.Errorf("call in the wrong slot: %+v", c)
			}
		}
	}

	// Exclusivity: no two owned calls of one slot overlap.
	overlaps := churn.Overlaps(l.Calls)
	for i, o := range overlaps {
		if i == 20 {
			t.Errorf("... %d more overlaps", len(overlaps)-20)
			break
		}
		t.Errorf("EXCLUSIVITY VIOLATED: %s", o)
	}

	// No loss.
	missing := churn.Missing(sent, l.Calls)
	if len(missing) > 0 {
		t.Errorf("%d of %d sent messages were never processed (no owned call), e.g. %q",
			len(missing), len(sent), missing[:min(len(missing), 20)])
		if st, err := r.client.Stats(ctx, churnTopic); err == nil {
			t.Errorf("stats: store %d, retry %d, prepare %d, dead %d; non-empty slots: %s",
				st.Store, st.Retry, st.Prepare, st.Dead, nonEmptySlots(st))
		}
	}

	// The topic ends empty.
	st, err := r.client.Stats(ctx, churnTopic)
	if err != nil {
		t.Errorf("stats: %v", err)
	} else if st.Store != 0 || st.Retry != 0 || st.Prepare != 0 || st.Dead != 0 {
		t.Errorf("at the end: store %d, retry %d, prepare %d, dead %d; want all 0 (slots %s)",
			st.Store, st.Retry, st.Prepare, st.Dead, nonEmptySlots(st))
	}

	// Workers: graceful stops exit 0, kills by SIGKILL; nothing bad in the output.
	for _, w := range r.workers {
		switch w.fate {
		case "SIGKILL":
			ws, ok := w.cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Errorf("worker %s ended with %v, not by our SIGKILL", w.id, w.err)
			}
		default:
			if w.err != nil {
				t.Errorf("worker %s exited with %v after %s", w.id, w.err, w.fate)
			}
		}
		out := w.output()
		for _, bad := range []string{"WARNING: DATA RACE", "panic:", "level=ERROR", "--- FAIL"} {
			if strings.Contains(out, bad) {
				t.Errorf("worker %s output has %q", w.id, bad)
			}
		}
	}

	// Every worker the coordinator should have used served slots; a thawed
	// worker got slots again after SIGCONT.
	counts := churn.Count(l.Calls)
	for _, w := range r.workers {
		if counts.PerWorker[w.id].Processed == 0 {
			t.Errorf("worker %s processed nothing", w.id)
		}
	}
	for _, ev := range r.events {
		if id, ok := strings.CutPrefix(ev.Name, "thaw "); ok {
			id, _, _ = strings.Cut(id, " ")
			n := 0
			for _, c := range l.Calls {
				if c.Worker == id && c.Owned && c.Start > ev.At {
					n++
				}
			}
			if n == 0 {
				t.Errorf("worker %s never served a slot again after %s", id, ev.Name)
			}
		}
	}

	// Every worker left ZooKeeper (the killed one's session expired).
	deadline := time.Now().Add(churnSession + 5*time.Second)
	for {
		ws, err := r.admin.Workers(ctx, r.ns)
		if err == nil && len(ws) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("workers still registered in ZooKeeper after all stopped: %+v (%v)", ws, err)
			break
		}
		time.Sleep(200 * time.Millisecond)
	}

	r.report(sent, l, counts, len(overlaps), feedEnd, stoppedAt)
}

func nonEmptySlots(st rmq.Stats) string {
	var parts []string
	for _, s := range st.Slots {
		if s.Store != 0 || s.Prepare != 0 || s.Dead != 0 {
			parts = append(parts, fmt.Sprintf("%d:s%d/p%d/d%d", s.Slot, s.Store, s.Prepare, s.Dead))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, " ")
}

// report prints the summary table of the run.
func (r *churnRun) report(sent []string, l churn.Log, counts churn.Counts, overlaps int, feedEnd, stoppedAt int64) {
	var b strings.Builder
	fmt.Fprintf(&b, "churn %s: %d workers × %d threads, topic of %d slots, %d keys, %d msg/s, session %v, consume timeout %v\n",
		r.t.Name(), len(r.workers), churnThreads, churnSlots, churnKeys, churnRate, churnSession, churnConsumeTimeout)
	fmt.Fprintf(&b, "resolution: the feed sends each slot a message at least every %v (a slot's keys recur every %d messages at %d msg/s, sent in batches every %v), so the times below may be late by up to ~%v\n",
		r.resStep, int(r.resStep.Seconds()*churnRate+0.5), churnRate, churnTick, r.resStep+churnTick)
	b.WriteString("all-served: until every slot had an owned call starting after the event; settled: until every slot was served by its final owner of the window; zk-view: until ZooKeeper showed every slot held by its assigned live owner\n")

	// Join events are measured from the joined worker's start marker.
	for _, ev := range r.events {
		if ev.joined != "" {
			if at := l.Mark(ev.joined, churn.MarkStart); at > 0 {
				ev.note = fmt.Sprintf("process start took %.3fs", time.Duration(at-ev.At).Seconds())
				ev.At = at
			}
		}
	}
	rows := [][]string{{"event", "at", "window", "moved", "all-served", "settled", "zk-view", "target", "note"}}
	for i, ev := range r.events {
		end := feedEnd
		if i+1 < len(r.events) {
			end = r.events[i+1].At
		}
		m := churn.Measure(l.Calls, churnSlots, ev.Event, end)
		zk := "not in window"
		if ev.zkSettled > 0 {
			zk = churn.FormatDuration(time.Duration(ev.zkSettled - ev.At))
		}
		note := ev.note
		if len(m.Unserved) > 0 {
			note = strings.TrimPrefix(note+fmt.Sprintf("; UNSERVED slots %v", m.Unserved), "; ")
		} else {
			note = strings.TrimPrefix(note+fmt.Sprintf("; last slot %d/%d", m.LastSlot, m.SettledSlot), "; ")
		}
		rows = append(rows, []string{ev.Name, fmt.Sprintf("%.3fs", r.since(ev.At)),
			fmt.Sprintf("%.1fs", time.Duration(end-ev.At).Seconds()), strconv.Itoa(m.Moved),
			churn.FormatDuration(m.AllServed), churn.FormatDuration(m.Settled), zk, target(ev.Name, m.Settled), note})
	}
	b.WriteString(churn.Table(rows))

	fmt.Fprintf(&b, "sent %d; calls %d; processed %d (distinct %d); duplicates %d; not-owner calls %d; overlaps %d; torn log lines %d; drain+stop %.3fs after the feed\n",
		len(sent), counts.Calls, counts.Processed, counts.Distinct, counts.Duplicates, counts.NotOwned, overlaps, l.Torn,
		time.Duration(stoppedAt-feedEnd).Seconds())
	wrows := [][]string{{"worker", "fate", "exit", "calls", "processed", "not-owner", "warnings"}}
	for _, w := range r.workers {
		c := counts.PerWorker[w.id]
		fate := w.fate
		if fate == "" {
			fate = "-"
		}
		wrows = append(wrows, []string{w.id, fate, w.exitStatus(), strconv.Itoa(c.Calls), strconv.Itoa(c.Processed),
			strconv.Itoa(c.NotOwned), warnings(w.output())})
	}
	b.WriteString(churn.Table(wrows))
	if len(r.events) > 0 {
		gaps := churn.Gaps(l.Calls, churnSlots, r.events[0].At, feedEnd)
		b.WriteString("longest times a slot had no owned call starting:")
		for _, g := range gaps[:min(len(gaps), 5)] {
			fmt.Fprintf(&b, " slot %d %.3fs (%.3fs→%.3fs);", g.Slot, g.Len().Seconds(), r.since(g.From), r.since(g.To))
		}
		b.WriteString("\n")
	}
	for _, content := range r.slow {
		var calls []string
		for _, c := range l.Calls {
			if c.Content == content {
				calls = append(calls, fmt.Sprintf("%s %.3fs→%.3fs owned=%v", c.Worker, r.since(c.Start), r.since(c.End), c.Owned))
			}
		}
		flag := ""
		for _, c := range l.Calls {
			if c.Content == content && !c.Owned && strings.Contains(content, churnSlowTag+"stop-") {
				// Not a safety problem (the slot stays ours until we release
				// it), but the drain was meant to let the call finish as owner.
				flag = " ← the graceful stop's drain lost ownership before the call in hand ended"
			}
		}
		fmt.Fprintf(&b, "mid-call message %s: calls %s%s\n", content, strings.Join(calls, "; "), flag)
	}
	summary := b.String()
	r.t.Log("\n" + summary)
	_ = os.WriteFile(filepath.Join(r.dir, "summary.txt"), []byte(summary), 0o644)
}

// target compares a settle time with the goal for the event (not an
// assertion): 2s after a join or a graceful leave (a thawed worker rejoins),
// session timeout + 2s after a crash or a freeze.
func target(event string, settled time.Duration) string {
	var goal time.Duration
	switch {
	case strings.HasPrefix(event, "join "), strings.HasPrefix(event, "stop "), strings.HasPrefix(event, "thaw "):
		goal = 2 * time.Second
	case strings.HasPrefix(event, "kill w"), strings.HasPrefix(event, "freeze "):
		goal = churnSession + 2*time.Second
	default:
		return "-"
	}
	verdict := "ok"
	if settled < 0 || settled > goal {
		verdict = "OVER"
	}
	return fmt.Sprintf("≤%v %s", goal, verdict)
}

// warnings counts a worker's WARN log lines by message.
func warnings(out string) string {
	counts := map[string]int{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.Contains(line, "level=WARN") {
			continue
		}
		msg := line
		if i := strings.Index(line, "msg="); i >= 0 {
			msg = line[i+4:]
			if strings.HasPrefix(msg, `"`) {
				if j := strings.Index(msg[1:], `"`); j >= 0 {
					msg = msg[1 : j+1]
				}
			} else if j := strings.IndexByte(msg, ' '); j >= 0 {
				msg = msg[:j]
			}
		}
		counts[msg]++
	}
	if len(counts) == 0 {
		return "-"
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d× %s", counts[m], strings.TrimPrefix(m, "rmq: ")))
	}
	return strings.Join(parts, "; ")
}
