package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/coordinator/internal/declinebook"
	"github.com/rmq-go/rmq/internal/backoff"
)

// membership is one Run of the coordinator: one worker's membership, on a
// ZooKeeper session of its own.
//
// A single loop goroutine does all ZooKeeper reads and writes (reconcile):
// it polls the few nodes it follows, comparing their modification zxids, every
// PollInterval (faster while a handover is under way), and lease releases and
// session events kick it. It does not use ZooKeeper watches: go-zookeeper
// re-registers watches after a reconnect while its receive loop already runs,
// an unsynchronized access (go-zookeeper issue #260) that the race detector
// reports; polling a version costs a few reads per second per worker.
//
// Two things happen outside the loop because they must not wait for it: the
// session callback invalidates every lease the moment the connection is lost,
// and the heartbeat extends lease deadlines after each successful round trip.
type membership struct {
	z     *Coordinator
	m     coordinator.Member
	h     coordinator.Handler
	paths nodePaths
	id    string
	log   *slog.Logger
	sess  *session
	kick  chan struct{}
	done  chan struct{} // closed when Run ends

	mu       sync.Mutex
	live     bool                            // a session is established
	closing  bool                            // Run is ending and closes the session itself
	leaseEnd time.Time                       // until when this session's leases hold (monotonic reading)
	leases   map[*coordinator.Grant]struct{} // handed out and not yet released

	// Loop state.
	joined int64 // session id in which the worker and election nodes exist
	// idTaken: since when another session's worker node holds this id
	// (join); zero while it does not.
	idTaken  time.Time
	election string
	leader   bool
	dirty    bool             // the leader must recompute assignments
	busy     bool             // a handover is under way: poll fast
	claims   int              // claims this pass (claimsPerPass)
	seen     map[string]int64 // path → modification zxid last read (data or children)
	topics   map[string]*topicState
	workers  map[string]workerNode // leader's cache of worker nodes
	node     workerNode            // this worker's node as last written
	book     declinebook.Book      // leader's record of the workers' declines
	leadAt   time.Time             // leader: when a decline seen ripens (zero: none waits)
}

// topicState is one subscribed topic in a run.
type topicState struct {
	coordinator.TopicThreads
	desired []coordinator.Owner // from the assignment node
	held    map[int]*heldSlot   // slots whose owner node is ours
	unsure  map[int]bool        // slots whose owner node this session may have made unawares (lostclaims.go)
}

// heldSlot is a slot whose owner node this session created.
type heldSlot struct {
	slot, thread int
	token        int64
	grant        *coordinator.Grant
	moving       bool      // revoked because the slot moves away: delete the node once released
	drainBy      time.Time // when moving: take the slot away at this time
	reissueAt    time.Time // released but still ours: earliest time for a new lease
}

func newMembership(z *Coordinator, m coordinator.Member, h coordinator.Handler) *membership {
	r := &membership{
		z: z, m: m, h: h, paths: newNodePaths(z.cfg.Root, m.Namespace), id: z.cfg.WorkerID,
		log:  z.log.With("worker", z.cfg.WorkerID, "namespace", m.Namespace),
		kick: make(chan struct{}, 1), done: make(chan struct{}),
		leases: make(map[*coordinator.Grant]struct{}), seen: make(map[string]int64),
		topics: make(map[string]*topicState), workers: make(map[string]workerNode),
	}
	for _, t := range m.Topics {
		r.topics[t.Topic] = &topicState{TopicThreads: t, held: make(map[int]*heldSlot), unsure: make(map[int]bool)}
	}
	if r.m.DrainTimeout <= 0 {
		r.m.DrainTimeout = 30 * time.Second
	}
	return r
}

func (r *membership) poke() { signal(r.kick) }

// run connects, then reconciles on every kick until ctx ends.
func (r *membership) run(ctx context.Context) error {
	defer close(r.done)
	sess, err := r.z.connect(ctx, r.onEvent)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	r.sess = sess
	defer func() {
		r.mu.Lock()
		r.closing = true // the session ends by our hand: not a suspension
		r.mu.Unlock()
		sess.conn.Close()
	}()
	r.mu.Lock()
	r.live = sess.conn.State() == zk.StateHasSession
	r.mu.Unlock()

	// An abandonment takes every lease away at once and closes the
	// connection, which fails the calls in flight: a pass waiting on an
	// ensemble out of reach would hold the loop (and the leases) until
	// go-zookeeper's receive timeout, two thirds of the session timeout.
	endWatch := make(chan struct{})
	var watch sync.WaitGroup
	watch.Go(func() {
		select {
		case <-r.m.Abandoned:
			r.suspend(zk.StateDisconnected)
			r.mu.Lock()
			r.closing = true // the session ends by our hand: not a suspension
			r.mu.Unlock()
			sess.conn.Close()
		case <-endWatch:
		}
	})
	defer watch.Wait()
	defer close(endWatch)

	// The heartbeat outlives ctx: leases must stay valid while leave() waits
	// for in-flight listeners to finish.
	hbCtx, stopHB := context.WithCancel(context.Background())
	var hb sync.WaitGroup
	hb.Go(func() { r.heartbeat(hbCtx) })
	defer hb.Wait()
	defer stopHB()

	// failures counts failed passes in a row, and retryAt is when the last
	// one's backoff ends: a pass does not start before it, whatever wakes
	// the loop. A suspended pass (no session) neither counts nor clears
	// them, so that a call the server answers by closing the connection
	// (which suspends, then reconnects, then wakes the loop) is not sent
	// again at once, over and over.
	failures, retryAt := 0, time.Time{}
	for {
		if !r.waitUntil(ctx, retryAt) {
			r.leave()
			return nil
		}
		err := r.reconcile()
		var fatal *fatalError
		if errors.As(err, &fatal) {
			r.leave()
			return fatal.err
		}
		var wait time.Duration
		switch {
		case errors.Is(err, errSuspended):
			wait = r.nextDeadline()
		case err != nil:
			failures++
			wait = backoff.Redis.Delay(failures)
			retryAt = time.Now().Add(wait)
			if failures == 1 || failures%10 == 0 {
				r.log.Warn("rmq: zookeeper reconcile failed; retrying", "failures", failures, "err", err)
			}
		default:
			failures, retryAt = 0, time.Time{}
			wait = r.nextDeadline()
		}
		select {
		case <-ctx.Done():
			r.leave()
			return nil
		case <-r.m.Abandoned:
			r.leave()
			return nil
		case <-r.kick:
		case <-r.m.Declines.Changed():
		case <-time.After(wait):
		}
	}
}

// errSuspended is the outcome of a pass without a session: nothing tried.
var errSuspended = errors.New("rmq: zookeeper session suspended")

// waitUntil waits until at, and reports false if ctx ended or the run was
// abandoned first.
func (r *membership) waitUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-r.m.Abandoned:
		return false
	case <-t.C:
		return true
	}
}

// fatalError ends Run: the configuration or the data is wrong, not the network.
type fatalError struct{ err error }

func (e *fatalError) Error() string { return e.err.Error() }

// reconcile brings ZooKeeper and the leases in line with the assignment.
func (r *membership) reconcile() error {
	sid, _ := r.current()
	if sid == 0 {
		return errSuspended // wait for the session
	}
	if r.joined != sid {
		r.forgetSession()
		if err := r.join(); err != nil {
			return err
		}
		r.joined, r.dirty = sid, true
	}
	declared := r.declare() // a failure must not hold up the rest: returned at the end
	if _, end := r.current(); !time.Now().Before(end) {
		r.beat() // leases need a fresh deadline before any is issued
	}
	if err := r.elect(); err != nil {
		return err
	}
	if r.leader {
		if err := r.lead(); err != nil {
			return err
		}
	}
	r.busy, r.claims = false, 0 // set again by whatever is still under way
	for _, t := range r.topics {
		if err := r.readAssignment(t); err != nil {
			return err
		}
		if t.desired == nil {
			r.busy = true // joined, waiting for the leader's first assignment
		}
		if err := r.applyAssignment(t, sid); err != nil {
			return err
		}
	}
	return declared
}

// forgetSession drops every claim of an earlier session: its owner nodes died
// with it, and so did its leases (lost at suspension).
func (r *membership) forgetSession() {
	for _, t := range r.topics {
		for _, c := range t.held {
			if c.grant != nil {
				c.grant.Lose()
				r.h.Revoked(c.grant.Lease())
			}
		}
		clear(t.held)
		clear(t.unsure)
	}
	clear(r.seen)
	r.election, r.leader = "", false
}

// join checks topic definitions and registers the worker for this session.
func (r *membership) join() error {
	conn, acl := r.sess.conn, r.z.acl
	for _, p := range []string{r.paths.workers(), r.paths.topics(), r.paths.election(), r.paths.assignments()} {
		if err := ensurePath(conn, p, acl); err != nil {
			return err
		}
	}
	node := workerNode{ID: r.id, PID: os.Getpid(), Topics: map[string]int{}, Started: time.Now().UnixMilli()}
	node.Host, _ = os.Hostname()
	for _, t := range r.topics {
		if err := ensurePath(conn, r.paths.owners(t.Topic), acl); err != nil {
			return err
		}
		if t.Definition != "" {
			if err := recordTopic(conn, r.paths, t.Topic, t.Definition, acl); err != nil {
				if errors.Is(err, coordinator.ErrTopicConflict) {
					return &fatalError{err}
				}
				return err
			}
		}
		node.Topics[t.Topic] = t.Threads
	}
	node.Declines = r.declinesNow()
	data, _ := json.Marshal(node)
	sid := r.sess.conn.SessionID()
	if err := createEphemeral(conn, r.paths.worker(r.id), data, acl, sid); err != nil {
		if errors.Is(err, zk.ErrNodeExists) {
			return r.idInUse()
		}
		return err
	}
	r.idTaken = time.Time{}
	name, err := conn.CreateProtectedEphemeralSequential(r.paths.election()+"/"+r.id+"-n_", []byte(r.id), acl)
	if err != nil {
		return fmt.Errorf("rmq: zookeeper join election: %w", err)
	}
	r.election, r.node = name[len(r.paths.election())+1:], node
	r.log.Info("rmq: joined", "session", fmt.Sprintf("%#x", sid), "topics", node.Topics)
	return nil
}

// idInUse is join's error when another session's worker node holds this
// worker's id: a live worker with the same id, or one that crashed and whose
// session has not expired yet (a process restarted under a stable id, a
// host or pod name). The join is tried again while that session may still
// expire, twice the session timeout; after that the id is another live
// worker's, and the Run ends with that error.
func (r *membership) idInUse() error {
	if r.idTaken.IsZero() {
		r.idTaken = time.Now()
		r.log.Warn("rmq: worker id registered by another session; waiting for it to expire", "worker", r.id)
	}
	if time.Since(r.idTaken) > idTakenWait(r.z.cfg.SessionTimeout) {
		return &fatalError{fmt.Errorf("rmq: worker id %q is already registered by another live worker", r.id)}
	}
	return fmt.Errorf("rmq: worker id %q is registered by another session: waiting for it to expire", r.id)
}

// idTakenWait is how long a join waits for another session's node of its id
// to go: the crashed session's timeout (taken to be this one's) and as much
// again for the server to notice.
func idTakenWait(sessionTimeout time.Duration) time.Duration { return 2 * sessionTimeout }

// createEphemeral creates an ephemeral node; a node left by this same session
// (a create whose reply was lost, or a join that failed later) counts as
// created, once data is written to it.
func createEphemeral(conn *zk.Conn, path string, data []byte, acl []zk.ACL, sid int64) error {
	_, err := conn.Create(path, data, zk.FlagEphemeral, acl)
	if errors.Is(err, zk.ErrNodeExists) {
		if _, st, err2 := conn.Exists(path); err2 == nil && st != nil && st.EphemeralOwner == sid {
			if _, err := conn.Set(path, data, st.Version); err != nil {
				return fmt.Errorf("rmq: zookeeper write %s: %w", path, err)
			}
			return nil
		}
	}
	if err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("rmq: zookeeper create %s: %w", path, err)
	}
	return err
}
