package coordinator

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmq-go/rmq/coordinator/internal/declinebook"
	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/rdb"
)

// redisRun is one Run of the Redis coordinator: one worker's membership.
//
// A single loop goroutine makes every decision and write (reconcile): it
// joins, leads when it holds the leader lease, reads the assignment, revokes
// slots that move away, releases the records of revoked slots, and claims
// slots assigned here. It wakes on messages of the coordinator's channel, on
// lease releases, on the heartbeat's news, and on a timer while a handover
// is under way. The heartbeat runs beside it (redisbeat.go), so that lease
// deadlines are extended whatever the loop is doing.
type redisRun struct {
	co   rdb.Coordination
	cfg  RedisConfig
	log  *slog.Logger
	m    Member
	h    Handler
	kick chan struct{} // capacity 1: "reconcile"
	beat chan struct{} // capacity 1: "beat now"
	done chan struct{} // closed when Run ends

	assignDirty   atomic.Bool // read the assignments again
	leadDirty     atomic.Bool // the leader must recompute the assignments
	describeDirty atomic.Bool // write this worker's description again (its declines changed)

	mu       sync.Mutex
	id       string   // the current incarnation; "" before joining
	leaseEnd int64    // monotonic ns until which this incarnation's leases hold
	renewals renewals // the latest confirmed renewals of this incarnation
	expired  bool     // the membership expired: lose everything, join again
	leaving  bool     // Run is ending: lead no more, take no slot
	// revokedAll: the leave revoked every lease, each bounded by its drain
	// deadline, so the heartbeat extends them whatever the assignment says.
	revokedAll bool
	last       rdb.Beat // the last heartbeat's news
	applied    int64    // the assignment epoch the last complete reconcile applied
	// leases holds the leases handed out and not yet released, each with
	// the monotonic ns past which it is never extended: its drain deadline
	// once revoked (endBy), noDeadline before.
	leases map[*Grant]int64

	// Loop state.
	started     time.Time
	suffix      string // random, drawn once per Run: Runs sharing a WorkerID join under different ids
	incarnation int
	// joinTried: the id of a join that failed, whose reply may have been
	// lost with the member made; the leave ends it (loop goroutine only).
	joinTried   string
	epochSeen   int64
	versionSeen int64
	busy        bool // a handover is under way: look again soon
	topics      map[string]*redisTopic
	declines    declinebook.Book  // the leader's
	descs       map[string]string // the workers' descriptions, read once per reconcile (gaveUp)
	leadAgain   time.Time         // when a decline seen ripens (zero: none waits)
	homeCut     error             // while leaving: a call to the coordinator's master went unanswered (homeCall)
}

// redisTopic is one subscribed topic in a run.
type redisTopic struct {
	TopicThreads
	keys    []string          // each slot's owner record key
	desired []Owner           // from the assignment
	held    []*redisHeld      // by slot: those whose owner record is ours, else nil
	waiting map[int]waited    // slot → the live holder's record it waits for, and since when
	unsure  map[int]time.Time // slot → when a claim of it last went unanswered (redisunsure.go)
}

// waited is a live holder's owner record that a slot's assigned owner waits
// to see released, and since when it has seen that record. The patience
// counts from then: a record that changes (another holder, or the same
// holder's new claim) starts the wait again, since its lease may have begun
// only now.
type waited struct {
	record string
	since  time.Time
}

// redisHeld is a slot this incarnation claimed.
type redisHeld struct {
	slot, thread int
	record       string
	grant        *Grant
	moving       bool      // revoked: release the record once the lease is released
	drainBy      time.Time // when moving: take the slot away at this time
	unreleased   int       // failed write-backs of the record, the lease over
	retryAt      time.Time // when unreleased: write it back again from this time
}

func newRedisRun(co rdb.Coordination, cfg RedisConfig, log *slog.Logger, m Member, h Handler) *redisRun {
	r := &redisRun{
		co: co, cfg: cfg, m: m, h: h,
		log:  log.With("worker", cfg.WorkerID, "namespace", m.Namespace),
		kick: make(chan struct{}, 1), beat: make(chan struct{}, 1), done: make(chan struct{}),
		leases: make(map[*Grant]int64), topics: make(map[string]*redisTopic), started: time.Now(),
		suffix: randomSuffix(),
	}
	keys := rdb.NewKeyspace(m.Namespace)
	for _, t := range m.Topics {
		r.topics[t.Topic] = &redisTopic{TopicThreads: t, keys: keys.OwnerKeys(t.Topic, t.SlotAmount),
			held: make([]*redisHeld, t.SlotAmount), waiting: make(map[int]waited), unsure: make(map[int]time.Time)}
	}
	if r.m.DrainTimeout <= 0 {
		r.m.DrainTimeout = 30 * time.Second
	}
	return r
}

// interval is the time between heartbeats: a fifth of the lease TTL.
func (r *redisRun) interval() time.Duration { return r.cfg.LeaseTTL / 5 }

// margin is how much earlier than Redis's expiry a lease ends locally: a
// tenth of the TTL, for clock rate differences between the two hosts.
func (r *redisRun) margin() time.Duration { return r.cfg.LeaseTTL / 10 }

func (r *redisRun) poke()     { signal(r.kick) }
func (r *redisRun) beatSoon() { signal(r.beat) }

// signal makes a non-blocking send on a channel of capacity 1.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// run joins and reconciles until ctx ends or the client abandons
// consumption, then leaves.
func (r *redisRun) run(ctx context.Context) error {
	defer close(r.done)
	background, stopBackground := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	defer bg.Wait()
	defer stopBackground()
	// Abandoning ends the Redis calls under way at once: the client waits
	// for this Run before it returns from Shutdown or Close.
	stopOnAbandon := make(chan struct{})
	defer close(stopOnAbandon)
	go func() {
		select {
		case <-r.m.Abandoned:
			stopBackground()
		case <-stopOnAbandon:
		}
	}()
	bg.Go(func() { r.listen(background) })
	// The heartbeat outlives ctx: leases must stay valid while leave waits
	// for in-flight listeners.
	bg.Go(func() { r.heartbeat(background) })

	// A reconcile under way when ctx ends is cut short (go-redis stops
	// retrying at its ctx's end), so that the leave starts within one call
	// of the client's, not after go-redis's retries of each of its calls.
	looks, stopLooks := context.WithCancel(background)
	defer stopLooks()
	defer context.AfterFunc(ctx, stopLooks)()

	failures := 0
	var moves rdb.SlotMoves // a reconcile refused while the coordinator's hash slot moves (slotmoves.go)
	for {
		err := r.reconcile(looks)
		var wait time.Duration
		if err == nil {
			failures = 0
			moves.Reset()
			wait = r.nextLook()
		} else if pause, ok := r.slotMoving("reconcile", &moves, err); ok {
			wait = pause
		} else {
			moves.Reset()
			failures++
			wait = min(backoff.Redis.Delay(failures), r.interval())
			if (failures == 1 || failures%20 == 0) && looks.Err() == nil {
				r.log.Warn("rmq: redis coordinator: reconcile failed; retrying", "failures", failures, "err", err)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-r.m.Abandoned:
			timer.Stop()
			r.abandon()
			return nil
		case <-ctx.Done():
			timer.Stop()
			// Not cut by an abandonment (which ends the heartbeat and the
			// calls of the loop): each of the leave's calls has its own
			// bound, and what is left after one is bounded by a second
			// (drain), to tell the group this process left.
			r.leave(context.WithoutCancel(background))
			return nil
		case <-r.m.Declines.Changed():
			r.describeDirty.Store(true)
		case <-r.kick:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// nextLook is how long the loop may sleep when nothing kicks it.
func (r *redisRun) nextLook() time.Duration {
	d := r.interval()
	if r.busy {
		d = min(d, handoverPoll)
	}
	now := time.Now()
	if !r.leadAgain.IsZero() {
		d = min(d, r.leadAgain.Sub(now))
	}
	for _, t := range r.topics {
		for c := range t.eachHeld {
			if c.unreleased > 0 {
				d = min(d, c.retryAt.Sub(now))
			} else if c.moving {
				d = min(d, c.drainBy.Sub(now))
			}
		}
	}
	return max(d, 5*time.Millisecond)
}

// handoverPoll is how often the loop looks while a handover is under way
// (a slot it waits for, a claim that lost a race). Releases are announced,
// so this only bounds a lost announcement.
const handoverPoll = 250 * time.Millisecond

// state returns the current incarnation, whether its leases hold now, and
// the last heartbeat's news.
func (r *redisRun) state() (id string, valid bool, last rdb.Beat, expired bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id, r.id != "" && r.leaseEnd > monoNow(), r.last, r.expired
}

// reconcile brings the leases and owner records in line with the assignment.
func (r *redisRun) reconcile(ctx context.Context) error {
	id, valid, last, expired := r.state()
	if expired {
		r.log.Warn("rmq: redis coordinator: membership expired; every slot is lost, joining again", "id", id)
		r.forget()
		id = ""
	}
	if id == "" {
		if err := r.join(ctx); err != nil {
			return err
		}
		id, valid, last, _ = r.state()
	}
	if err := r.redescribe(ctx, id); err != nil {
		return err
	}
	if last.Leader != id {
		r.leadAgain = time.Time{} // ripening declines are the leader's to honour
	}
	if last.Leader == id && (r.leadDirty.Swap(false) || last.Version != r.versionSeen || r.leadDue()) {
		if err := r.lead(ctx, id, last.Version); err != nil {
			r.leadDirty.Store(true)
			return err
		}
	}
	if r.assignDirty.Swap(false) || last.Epoch != r.epochSeen {
		if err := r.readAssignments(ctx, last.Epoch); err != nil {
			r.assignDirty.Store(true)
			return err
		}
	}
	r.busy = false
	r.descs = nil
	var first error
	for _, t := range r.topics {
		// A failure on one topic's slots (their Cluster master down) must
		// not keep the others from being revoked, released or claimed.
		if err := r.apply(ctx, t, id, valid); err != nil && first == nil {
			first = err
		}
	}
	// The assignment is applied even if some call failed: apply revokes the
	// slots that move away before it calls Redis, so every lease still held
	// is one the assignment gives this worker, or one being handed over
	// (revoked, and taken away at the drain timeout at the latest). What
	// can fail is a claim of a slot not held yet, the write-back of a record
	// whose lease ended, or a hand-back: none is a lease held. The leases
	// held therefore go on being extended while the others are tried again:
	// a claim failing on one Cluster master (down, or cut off from this
	// worker) does not stop the slots of the other masters.
	r.mu.Lock()
	r.applied = r.epochSeen
	r.mu.Unlock()
	return first
}

// join registers a new incarnation of this worker, as
// "<WorkerID>.<suffix>.<incarnation>": the suffix keeps apart the Runs that
// share a WorkerID (a restarted process whose predecessor still runs or is
// cut off, two clients sharing one Redis coordinator), which would otherwise
// be one member and take each other's records for their own (claim). A join
// tried again after a failure reuses the id, so that a join whose reply was
// lost leaves no second member behind.
func (r *redisRun) join(ctx context.Context) error {
	r.incarnation++
	id := fmt.Sprintf("%s.%s.%d", r.cfg.WorkerID, r.suffix, r.incarnation)
	sent := monoNow()
	expiry, err := r.co.Join(ctx, id, r.cfg.LeaseTTL, r.describe(false), false)
	if err != nil {
		r.incarnation--
		r.joinTried = id
		return fmt.Errorf("rmq: redis coordinator join: %w", err)
	}
	r.joinTried = ""
	if expiry < 0 {
		return fmt.Errorf("rmq: redis coordinator join of %s refused", id)
	}
	r.mu.Lock()
	r.id, r.expired, r.applied = id, false, -1
	r.leaseEnd = sent + int64(r.cfg.LeaseTTL-r.margin()-r.replicaLag())
	r.renewals.reset(sent)
	r.last = rdb.Beat{}
	r.mu.Unlock()
	r.epochSeen, r.versionSeen = -1, -1
	r.assignDirty.Store(true)
	r.beatSoon() // learn who leads, and lead if nobody does
	r.log.Info("rmq: redis coordinator: joined", "id", id)
	return nil
}

// forget drops every claim of an expired incarnation: its leases are lost,
// and its records belong to a worker that is gone for good, for whoever is
// assigned the slot next (this worker's next incarnation included).
func (r *redisRun) forget() {
	for _, t := range r.topics {
		for c := range t.eachHeld {
			c.grant.Lose()
			r.h.Revoked(c.grant.Lease())
		}
		clear(t.held)
		clear(t.waiting)
		clear(t.unsure) // the records name a worker gone for good: anyone claims over them
		t.desired = nil
	}
	r.mu.Lock()
	r.id = ""
	r.mu.Unlock()
}

// abandon loses every lease at once (the client no longer waits for its
// listeners) and tells the group it left, so that the slots move as soon as
// the leader notices, bounded by a second.
func (r *redisRun) abandon() {
	for _, t := range r.topics {
		for c := range t.eachHeld {
			c.grant.Lose()
			r.h.Revoked(c.grant.Lease())
		}
	}
	id, _, _, _ := r.state()
	if id == "" {
		return
	}
	end := func(ctx context.Context) error { return r.co.Leave(ctx, id) }
	if err := within(context.Background(), leaveCallWait, end); err != nil {
		r.log.Warn("rmq: redis coordinator: leave failed; the slots move when the membership expires", "err", err)
	}
}
