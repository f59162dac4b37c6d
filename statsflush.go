package rmq

import (
	"context"
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
	mu      sync.Mutex
	started bool
	closed  bool
	stop    context.CancelFunc
	done    chan struct{}

	id       string                  // names the client's batches (rdb.StatsBatch), random
	seq      int64                   // the last batch's number (flusher goroutine only)
	pending  *rdb.StatsBatch         // built, not known to be added (likewise)
	moves    rdb.SlotMoves           // the pending batch refused while the namespace's hash slot moves (likewise)
	last     map[string]TopicMetrics // put in a batch so far (likewise)
	breakers map[string]string       // topic → breaker state shared now, if not closed (likewise)
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
	f.stop, f.done = stop, make(chan struct{})
	go func() {
		defer close(f.done)
		for ctx.Err() == nil {
			wait.Sleep(ctx, statsFlushEvery)
			if ctx.Err() == nil {
				f.flush(ctx)
			}
		}
	}()
}

// close stops the flusher and flushes what is left, within ctx.
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
	f.lastCall(ctx, f.flush)
	until := time.Now().Add(statsCloseMoveWait)
	for f.pending != nil && f.moves.Lasted(time.Now()) > 0 && time.Now().Before(until) {
		wait.Sleep(ctx, statsCloseMovePause)
		if ctx.Err() != nil {
			return
		}
		f.lastCall(ctx, func(ctx context.Context) { f.send(ctx) })
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
	f.shareBreakers(ctx)
	if f.pending != nil && !f.send(ctx) {
		return
	}
	if f.last == nil {
		f.last = make(map[string]TopicMetrics)
	}
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

// send adds the pending batch; it reports whether that is done.
func (f *statsFlusher) send(ctx context.Context) bool {
	_, err := f.c.broker.AddStats(ctx, *f.pending)
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
