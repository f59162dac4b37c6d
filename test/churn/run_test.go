package churn_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/childproc"
	"github.com/rmq-go/rmq/internal/churn"
	"github.com/rmq-go/rmq/internal/testenv"
)

// churnRun is one scenario: its namespace, workers, feed and events.
type churnRun struct {
	t          *testing.T
	b          testenv.Backend
	deployment churnDeployment
	kind       coordinatorKind
	obs        observer // the parent's view of the coordinator
	ns         string
	dir        string
	client     *rmq.Client
	keys       []string // feed order: consecutive keys are in different slots
	resStep    time.Duration
	t0         time.Time     // when the feed started
	lookahead  time.Duration // the workers' WithLookahead

	// env holds a worker's own environment, after the run's (a partitioned
	// worker's servers: see partition_test.go).
	env     map[string][]string
	workers []*churnWorker
	events  []*churnEvent
	feed    churnFeed
	slow    []string // slow messages sent for mid-call signals
}

// churnEvent is one change during a run.
type churnEvent struct {
	churn.Event
	live []string // workers that should hold slots once it settles
	// viewSettled is when the coordinator showed every slot held by its
	// assigned owner among live (Unix ns; 0: not before the next event).
	viewSettled int64
	joined      string // for a join: the worker, whose start marker replaces At
	note        string
	// avoid, when set, must be assigned none of the slots in avoided once
	// the event settles (a worker cut off from their master: it declines them).
	avoid   string
	avoided map[int]bool
}

func newChurnRun(t *testing.T, kind coordinatorKind, deployment churnDeployment) *churnRun {
	b := deployment.backend(t)
	obs, err := kind.observer(t, b.Redis)
	if err != nil {
		t.Fatal(err)
	}
	r := &churnRun{t: t, b: b, kind: kind, obs: obs, ns: testenv.Namespace(t, b), deployment: deployment}
	if o, ok := obs.(interface{ nameByPID(func(int) string) }); ok {
		o.nameByPID(r.nameOfPID)
	}
	r.dir = t.TempDir()
	if keep := os.Getenv(churnKeepEnv); keep != "" {
		r.dir = filepath.Join(keep, r.ns)
		if err := os.MkdirAll(r.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("logs kept in %s", r.dir)
	}
	c, err := rmq.New(b.Redis, rmq.WithNamespace(r.ns), rmq.WithCoordinator(obs.coordinator()))
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
			msgs := make([]rmq.OutgoingMessage, n)
			contents := make([]string, n)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			for i := range n {
				key := r.keys[(seq+i)%len(r.keys)]
				contents[i] = fmt.Sprintf("%s|%07d", key, seq+i)
				msgs[i] = rmq.FixedTimeMessage{Topic: churnTopic, Content: []byte(contents[i]), SlotBasis: key}
			}
			err := r.sendDue(ctx, func(now time.Time) error {
				for i := range msgs {
					m := msgs[i].(rmq.FixedTimeMessage)
					m.FixedTime = now.Add(churnDue)
					msgs[i] = m
				}
				return r.client.Producer().SendBatch(ctx, msgs...)
			})
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

// sendDue runs send, which stores messages due churnDue after now. The
// producer refuses a FixedTime that has already passed, which happens when
// the process stalls for longer than churnDue between stamping and sending
// (CPU steal and a loaded VM stall it 50-100 ms, several times in a row at
// worst); send then runs again with a fresh now, until it is not refused or
// ctx ends. A refused send stores nothing, so no message goes twice.
//
// A send that Redis fails (it is down, or failing over) goes again after
// 100 ms until ctx ends, as a producer keeps retrying: part of it may have
// been stored, and sending a content twice stores it once.
func (r *churnRun) sendDue(ctx context.Context, send func(now time.Time) error) error {
	for {
		now := time.Now()
		err := send(now)
		switch {
		case err == nil || ctx.Err() != nil:
			return err
		case errors.Is(err, rmq.ErrInvalidTime):
			r.t.Logf("%7.3fs  stalled %v between stamping a send and sending it; stamping it again",
				r.since(time.Now().UnixNano()), time.Since(now).Round(time.Millisecond))
		case isInputError(err):
			return err
		default:
			r.t.Logf("%7.3fs  send failed, again in 100ms: %v", r.since(time.Now().UnixNano()), err)
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// isInputError reports whether err says the message itself is bad.
func isInputError(err error) bool {
	for _, e := range []error{rmq.ErrInvalidTopic, rmq.ErrUnknownTopic, rmq.ErrTopicTypeMismatch, rmq.ErrEmptyContent,
		rmq.ErrContentTooLarge, rmq.ErrInvalidMessage, rmq.ErrClosed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
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
	*childproc.Process
	id       string
	logPath  string // call log (JSON lines)
	launched time.Time
	fate     string // how the parent ended it: "", "SIGTERM", "SIGKILL", "stdin EOF"
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

// nameOfPID returns the id of the worker process pid ("" for none).
func (r *churnRun) nameOfPID(pid int) string {
	for _, w := range r.workers {
		if w.PID() == pid {
			return w.id
		}
	}
	return ""
}

// startWorker starts worker id (see childproc.Start for its cleanup).
func (r *churnRun) startWorker(id string) *churnWorker {
	r.t.Helper()
	w := &churnWorker{id: id, logPath: filepath.Join(r.dir, id+".jsonl"), launched: time.Now()}
	env := append([]string{
		churnWorkerEnv + "=" + id,
		churnCoordEnv + "=" + r.kind.name,
		churnRedisEnv + "=" + string(r.deployment),
		churnNSEnv + "=" + r.ns,
		churnLogEnv + "=" + w.logPath,
		churnThreadsEnv + "=" + strconv.Itoa(churnThreads),
		churnAheadEnv + "=" + r.lookahead.String(),
	}, r.env[id]...)
	w.Process = childproc.Start(r.t, "worker "+id, "TestChurnWorkerProcess", filepath.Join(r.dir, id+".stderr"), env...)
	r.workers = append(r.workers, w)
	return w
}

// signal sends sig to worker w, which must still run.
func (r *churnRun) signal(w *churnWorker, sig syscall.Signal) {
	r.t.Helper()
	if w.Exited() {
		r.t.Fatalf("worker %s exited before %v: %v\n%s", w.id, sig, w.Err(), w.Output())
	}
	if err := w.Signal(sig); err != nil {
		r.t.Fatalf("signal %v to worker %s: %v", sig, w.id, err)
	}
}
