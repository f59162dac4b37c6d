package rmq

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/wait"
)

// statsFlusher adds the client's metrics to the shared ones; it starts with
// the client's first send or Start, and its last flush happens in Close.
type statsFlusher struct {
	c *Client

	running atomic.Bool // started, for a lock-free check on the send path
	// flushing is held by each flush from its read of the metrics to its
	// batch's reply, and by a topic's deletion (hold): a flush that read
	// the topic's figures never adds them after its shared metrics went.
	flushing      sync.Mutex
	mu            sync.Mutex
	started       bool
	closed        bool
	closing       bool               // Close has begun (quiet): each flush is bounded, and they end once one went unanswered
	stop          context.CancelFunc // ends the flusher's sleep, not a flush under way
	done          chan struct{}
	call          *flushCall              // the flush under way, if any
	deletedTopics map[string]TopicMetrics // topics deleted since the last flush, with their figures then (deleted)
	now           chan chan struct{}      // asks the flusher for a flush now (flushNow)

	id       string                  // names the client's batches (rdb.StatsBatch), random
	seq      int64                   // the last batch's number (flusher goroutine only)
	pending  *rdb.StatsBatch         // built, not known to be added (likewise)
	moves    rdb.SlotMoves           // the pending batch refused while the namespace's hash slot moves (likewise)
	last     map[string]TopicMetrics // put in a batch so far (likewise)
	breakers map[string]string       // topic → breaker state shared now, if not closed (likewise)
	cut      bool                    // Redis left the last flush call that said anything of its reach unanswered (heard; likewise)
}

// A flush is one script on several of the namespace's keys, which a Cluster
// refuses (TRYAGAIN) while a resharding has split them between two masters.
// That is no failure: the batch goes again with the next flush, logged at
// Debug, and at Warn only once the refusals have lasted statsMoveWarn (a
// migration left open). Close, whose flush is the last, tries again for up
// to statsCloseMoveWait.
const (
	statsMoveWarn       = 30 * time.Second
	statsCloseMoveWait  = 5 * time.Second
	statsCloseMovePause = 100 * time.Millisecond
)

// start runs the flusher unless it runs or the client closed.
func (f *statsFlusher) start() {
	if f.running.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started || f.closed {
		return
	}
	f.started = true
	f.running.Store(true)
	ctx, stop := context.WithCancel(context.Background())
	f.stop, f.done, f.now = stop, make(chan struct{}), make(chan chan struct{})
	go func() {
		defer close(f.done)
		timer := time.NewTimer(statsFlushEvery)
		defer timer.Stop()
		for {
			var asked chan struct{}
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			case asked = <-f.now:
				timer.Stop()
			}
			ok := f.periodic()
			if asked != nil {
				close(asked)
			}
			if !ok {
				return
			}
			timer.Reset(statsFlushEvery)
		}
	}()
}

// flushNow has the flusher flush now, if it runs, and waits for that flush
// within ctx. The end of consumption calls it before the process's presence
// goes, so that what its consumers counted is shared before DeleteTopic may
// delete their topic's metrics (a later flush would add it back).
func (f *statsFlusher) flushNow(ctx context.Context) {
	f.mu.Lock()
	running := f.started && !f.closed
	f.mu.Unlock()
	if !running {
		return
	}
	done := make(chan struct{})
	select {
	case f.now <- done:
	case <-f.done:
		return
	case <-ctx.Done():
		return
	}
	select {
	case <-done:
	case <-f.done:
	case <-ctx.Done():
	}
}

// flushCall is a periodic flush under way: when it began, and what cancels
// its ctx.
type flushCall struct {
	began  time.Time
	cancel context.CancelFunc
}

// periodic runs one periodic flush; it reports false, and runs none, once
// Close has begun and Redis left the last flush unanswered. A flush's ctx is
// not the flusher's: stopping the flusher lets a flush under way end, so
// that Close's last flush need not send its batch again. Once Close has
// begun, each flush runs within statsCloseCallWait.
func (f *statsFlusher) periodic() bool {
	f.mu.Lock()
	if f.closing && f.cut {
		f.mu.Unlock()
		return false
	}
	var ctx context.Context
	var cancel context.CancelFunc
	if f.closing {
		ctx, cancel = context.WithTimeout(context.Background(), statsCloseCallWait)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	f.call = &flushCall{began: time.Now(), cancel: cancel}
	f.mu.Unlock()
	f.flush(ctx)
	f.mu.Lock()
	f.call = nil
	f.mu.Unlock()
	cancel()
	return true
}

// quiet bounds the periodic flushes while Close runs: a flush under way
// ends statsCloseCallWait after it began, and so does each one after it,
// and they end once Redis left one unanswered (cut). Close calls it first,
// so that a flush into a Redis out of reach ends while the consumers stop,
// not after them (go-redis's retries heed a ctx, the attempt under way does
// not), and so that what the consumers count while they drain still reaches
// the shared metrics every statsFlushEvery.
func (f *statsFlusher) quiet() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	if f.call != nil {
		time.AfterFunc(statsCloseCallWait-time.Since(f.call.began), f.call.cancel)
	}
}

// close stops the flusher and flushes what is left, within ctx; not when
// Redis left the last flush unanswered (cut), since a call into a Redis out
// of reach waits out the client's timeouts whatever its ctx: what is left is
// then lost, with a Warn line, as when the last flush fails.
func (f *statsFlusher) close(ctx context.Context) {
	f.mu.Lock()
	started := f.started && !f.closed
	f.closed = true
	f.mu.Unlock()
	if !started {
		return
	}
	f.stop()
	<-f.done
	if f.cut {
		// Each call into a Redis out of reach waits out the client's timeouts.
		f.c.cfg.logger.Warn("rmq: Redis left the last flush unanswered; Close's last metrics flush is not tried")
		return
	}
	f.lastCall(ctx, f.flush)
	until := time.Now().Add(statsCloseMoveWait)
	refused := func() bool { // the last batch refused while the namespace's hash slot moves
		f.flushing.Lock()
		defer f.flushing.Unlock()
		return f.pending != nil && f.moves.Lasted(time.Now()) > 0
	}
	for refused() && time.Now().Before(until) {
		wait.Sleep(ctx, statsCloseMovePause)
		if ctx.Err() != nil {
			return
		}
		f.lastCall(ctx, func(ctx context.Context) {
			f.flushing.Lock()
			defer f.flushing.Unlock()
			if f.pending != nil {
				f.send(ctx)
			}
		})
	}
}

// statsCloseCallWait bounds how long go-redis may retry each of Close's
// flushes. go-redis stops retrying and dialling at a ctx's deadline, so a
// Redis out of reach costs a flush one ReadTimeout, where its retries took
// about 20 s with go-redis's defaults; the batch is then lost, with a Warn
// line, as after any failure of the last flush.
const statsCloseCallWait = time.Second

// lastCall runs flush, one of Close's, within statsCloseCallWait of ctx.
func (f *statsFlusher) lastCall(ctx context.Context, flush func(ctx context.Context)) {
	ctx, cancel := context.WithTimeout(ctx, statsCloseCallWait)
	defer cancel()
	flush(ctx)
}

// flush adds what the metrics gained since the last flush, and shares the
// breakers' states (breakershare.go). A batch that failed goes again first,
// unchanged, so that Redis adds it once even if the failed call had added it
// (its reply lost); what the metrics gained meanwhile follows in a new batch.
func (f *statsFlusher) flush(ctx context.Context) {
	f.flushing.Lock()
	defer f.flushing.Unlock()
	f.shareBreakers(ctx)
	if f.pending != nil && !f.send(ctx) {
		return
	}
	if f.last == nil {
		f.last = make(map[string]TopicMetrics)
	}
	f.mu.Lock()
	for topic, then := range f.deletedTopics {
		f.last[topic] = then
	}
	clear(f.deletedTopics)
	f.mu.Unlock()
	minute := time.Now().Unix() / 60
	var deltas []rdb.StatsDelta
	now := f.c.TopicMetrics()
	for _, m := range now {
		fields := deltaFields(f.last[m.Topic], m)
		if len(fields) > 0 {
			deltas = append(deltas, rdb.StatsDelta{Topic: m.Topic, Minute: minute, Fields: fields})
		}
		f.last[m.Topic] = m
	}
	if len(deltas) == 0 {
		return
	}
	f.seq++
	f.pending = &rdb.StatsBatch{Client: f.id, Seq: f.seq, Deltas: deltas}
	f.send(ctx)
}

// hold waits for a flush under way and holds the next ones until release
// is called: a topic's deletion (DeleteTopic) deletes its shared metrics
// meanwhile, so that no flush that read the topic's figures adds them back.
func (f *statsFlusher) hold() (release func()) {
	f.flushing.Lock()
	return f.flushing.Unlock
}

// deleted, under hold once topic's shared metrics are deleted, counts its
// figures as sent up to then, its figures at its deletion: a topic defined
// again under its name is sent what the client counts from then on, neither
// what the deleted one counted and had not yet sent, nor less what it sent
// (which went negative). A batch still to send drops the topic's part (sent
// again unchanged, it would add the metrics back: a batch Redis had added is
// not added again whatever it holds, stats.lua). A deletion that failed
// calls neither, and what was not sent yet goes with the next flush.
func (f *statsFlusher) deleted(topic string, then TopicMetrics) {
	f.mu.Lock()
	if f.deletedTopics == nil {
		f.deletedTopics = make(map[string]TopicMetrics)
	}
	f.deletedTopics[topic] = lean(then)
	f.mu.Unlock()
	if f.pending != nil {
		f.pending.Deltas = slices.DeleteFunc(f.pending.Deltas, func(d rdb.StatsDelta) bool { return d.Topic == topic })
		if len(f.pending.Deltas) == 0 {
			f.pending = nil
		}
	}
}

// lean returns m without the counts of its empty histograms, which a flush
// reads as zeros (deltaFields): what it keeps of a deleted topic, which a
// client that makes and deletes topics of new names keeps of each.
func lean(m TopicMetrics) TopicMetrics {
	if m.Lateness.Count == 0 {
		m.Lateness = Histogram{}
	}
	if m.ListenerDuration.Count == 0 {
		m.ListenerDuration = Histogram{}
	}
	return m
}

// send adds the pending batch; it reports whether that is done.
func (f *statsFlusher) send(ctx context.Context) bool {
	sent := time.Now()
	_, err := f.c.broker.AddStats(ctx, *f.pending)
	f.heard(err, sent)
	if err == nil {
		f.moves.Reset()
		f.pending = nil
		return true
	}
	log := f.c.cfg.logger
	if _, debug, warn, moving := f.moves.Refused(err, time.Now(), statsMoveWarn); moving {
		if warn {
			log.Warn("rmq: sharing metrics refused while the namespace's hash slot moves, for a while; they go with "+
				"the next flush", "for", f.moves.Lasted(time.Now()).Round(time.Millisecond), "err", err)
		} else if debug {
			log.Debug("rmq: sharing metrics refused while the namespace's hash slot moves; they go with the next flush",
				"err", err)
		}
		return false
	}
	f.moves.Reset()
	log.Warn("rmq: sharing metrics failed; they go with the next flush", "err", err)
	return false
}

// heard notes what a flush's call, sent at sent, says of Redis's reach
// (cut; unansweredNote). A flush that failed calls again at the next one
// (its batch or breaker states are still to send), so while there is
// anything to send the note is at most one flush old.
func (f *statsFlusher) heard(err error, sent time.Time) {
	f.cut = unansweredNote(f.cut, err, time.Since(sent))
}
