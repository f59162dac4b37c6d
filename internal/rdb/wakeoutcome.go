package rdb

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// wakeLogEvery is the least time between two log lines of failed wake-up
// publications. Where every write's wake-up fails (a master going down), a
// line per failure would be a line per write.
const wakeLogEvery = time.Second

// wakeOutcome logs failed wake-up publications of one broker and has their
// topics' wake-ups published again (wakeretry.go). It logs at most one line
// per wakeLogEvery, which counts the failures not logged since the line
// before ("unlogged"). When a Cluster refuses SPUBLISH itself (unknown
// before Redis 7.0, or not in the user's ACL), it turns sharded wake-ups off
// for shardUnknownRetry (a minute): the broker's wake-ups then go with
// PUBLISH to the topics' broadcast channels, which consumers follow on every
// kind of Redis; then SPUBLISH is tried again, so that producers turn back
// to it once every node has it (a rolling upgrade to Redis 7, an ACL
// changed), at the cost of one write's wake-ups a minute where it is still
// refused.
type wakeOutcome struct {
	log   *slog.Logger
	retry *wakeRetry // nil: failures are only logged
	// unshardedTill: until when (Unix ns) wake-ups go unsharded after the
	// Cluster refused SPUBLISH; 0 while they go sharded.
	unshardedTill atomic.Int64
	told          atomic.Bool   // the refusal was logged
	shardRetry    time.Duration // how long wake-ups stay unsharded; 0: shardUnknownRetry

	mu       sync.Mutex
	last     time.Time // when a line was last logged
	unlogged int
}

// sharded reports whether wake-ups may go to sharded channels: always,
// unless the Cluster refused SPUBLISH less than shardRetry ago.
func (w *wakeOutcome) sharded() bool {
	if w == nil {
		return true
	}
	till := w.unshardedTill.Load()
	if till == 0 {
		return true
	}
	if time.Now().UnixNano() < till {
		return false
	}
	w.unshardedTill.CompareAndSwap(till, 0)
	return true
}

// failedOn logs a failed publication of the wake-ups payload whose
// topic's broadcast channel is channel, and has them published again
// (payload may be reused once it returns). Two failures are
// no node in trouble, so the wake-up goes again at once: a refusal of
// SPUBLISH itself (see turnUnsharded), and a sharded publication answered
// MOVED, whose slot moved to another master (a resharding, a failover) after
// the entries it follows were stored, and they went with it; a MOVED is not
// logged either (during a resharding that was a line every second). A
// CLUSTERDOWN (a node reset as it leaves the Cluster, or a Cluster down a
// moment) is not logged the first time: the wake-up goes again after the
// delay, and a failure of that is.
func (w *wakeOutcome) failedOn(channel string, payload []byte, err error) {
	switch {
	case refusedCommand(err, "SPUBLISH"):
		w.turnUnsharded(err)
		w.retry.addNow(channel, payload)
	case redirected(err):
		w.retry.addNow(channel, payload)
	case clusterDown(err) && w.retry != nil:
		w.retry.add(channel, payload) // logged if it fails again (wakeRetry.run)
	default:
		w.Complete(err)
		w.retry.add(channel, payload)
	}
}

// turnUnsharded turns sharded wake-ups off after a refusal of SPUBLISH, for
// shardRetry (no timer: sharded looks at the time); the first refusal is
// logged. A refusal while they are off (a publication written before) does
// not put the next try back.
func (w *wakeOutcome) turnUnsharded(err error) {
	if !w.sharded() {
		return
	}
	after := w.shardRetry
	if after <= 0 {
		after = shardUnknownRetry
	}
	if !w.unshardedTill.CompareAndSwap(0, time.Now().Add(after).UnixNano()) {
		return // another refusal turned them off meanwhile
	}
	if w.told.CompareAndSwap(false, true) {
		w.log.Warn("rmq: the Redis Cluster refuses sharded pub/sub (SPUBLISH: Redis 7.0 or later, and in the user's ACL): "+
			"wake-ups go to the topics' broadcast channels, SPUBLISH tried again once a minute", "err", err)
	}
}

// refusedCommand reports whether err holds a server's refusal of the
// command name itself, whatever its arguments: "ERR unknown command
// 'spublish', with args ..." (Redis 7; backquotes in Redis 6) or "NOPERM
// this user has no permissions to run the 'spublish' command" (an ACL; "User
// <name> has" from Redis 7.2), the name as it was sent. An ACL's refusal of a
// channel or key is not one.
func refusedCommand(err error, name string) bool {
	msg, ok := replyError(err)
	if !ok {
		return false
	}
	if rest, ok := strings.CutPrefix(msg, "ERR unknown command "); ok {
		return len(rest) >= len(name)+2 && quoted(rest[:len(name)+2], name)
	}
	if _, ok := strings.CutPrefix(msg, "NOPERM "); ok {
		_, rest, found := strings.Cut(msg, " permissions to run the ")
		return found && len(rest) >= len(name)+2 && quoted(rest[:len(name)+2], name) &&
			rest[len(name)+2:] == " command"
	}
	return false
}

// quoted reports whether s is name in quotes or backquotes, in any case.
func quoted(s, name string) bool {
	q := s[0]
	return (q == '\'' || q == '`') && s[len(s)-1] == q && strings.EqualFold(s[1:len(s)-1], name)
}

// noPermission reports whether err holds an ACL's refusal (NOPERM).
func noPermission(err error) bool {
	msg, ok := replyError(err)
	return ok && strings.HasPrefix(msg, "NOPERM ")
}

// replyError returns the error reply err holds, ours or go-redis's.
func replyError(err error) (string, bool) {
	var re ReplyError
	var ge redis.Error
	switch {
	case errors.As(err, &re):
		return string(re), true
	case errors.As(err, &ge):
		return ge.Error(), true
	}
	return "", false
}

// pubCompleter completes one publication of a topic's wake-ups written to a
// send stream: a failure has them published again (failedOn). It is put
// back in pubCompleters once complete, so that a write's publications
// allocate nothing.
type pubCompleter struct {
	w       *wakeOutcome
	channel string // the topic's broadcast channel
	payload []byte // a copy of the publication's
}

var pubCompleters = sync.Pool{New: func() any { return new(pubCompleter) }}

// pubCompleterKeep is the largest payload buffer a pubCompleter keeps when
// put back.
const pubCompleterKeep = 1 << 10

// completerOf returns the Completer of publication p.
func (w *wakeOutcome) completerOf(p *Publication) *pubCompleter {
	c := pubCompleters.Get().(*pubCompleter)
	c.w, c.channel, c.payload = w, p.Channel, append(c.payload[:0], p.Payload...)
	return c
}

// Complete implements Completer.
func (c *pubCompleter) Complete(err error) {
	if err != nil {
		c.w.failedOn(c.channel, c.payload, err)
	}
	c.w, c.channel = nil, ""
	if cap(c.payload) > pubCompleterKeep {
		c.payload = nil
	}
	pubCompleters.Put(c)
}

// Complete implements Completer: it logs a failure.
func (w *wakeOutcome) Complete(err error) {
	if err == nil {
		return
	}
	w.mu.Lock()
	now := time.Now()
	if !w.last.IsZero() && now.Sub(w.last) < wakeLogEvery {
		w.unlogged++
		w.mu.Unlock()
		return
	}
	n := w.unlogged
	w.last, w.unlogged = now, 0
	w.mu.Unlock()
	w.log.Warn("rmq: wake-up publish failed", "err", err, "unlogged", n)
}
