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
// before ("unlogged"). When a Cluster answers that it does not know SPUBLISH
// (Redis before 7.0), it turns sharded wake-ups off for good: the broker's
// wake-ups then go with PUBLISH to the topics' broadcast channels, which
// consumers follow on every kind of Redis.
type wakeOutcome struct {
	log       *slog.Logger
	retry     *wakeRetry  // nil: failures are only logged
	unsharded atomic.Bool // SPUBLISH is unknown to the Cluster

	mu       sync.Mutex
	last     time.Time // when a line was last logged
	unlogged int
}

// sharded reports whether wake-ups may still go to sharded channels.
func (w *wakeOutcome) sharded() bool { return w == nil || !w.unsharded.Load() }

// failedOn logs a failed publication of a wake-up whose broadcast channel is
// channel, and has that topic's wake-up published again.
func (w *wakeOutcome) failedOn(channel string, err error) {
	if unknownCommand(err, "SPUBLISH") {
		if w.unsharded.CompareAndSwap(false, true) {
			w.log.Warn("rmq: the Redis Cluster has no sharded pub/sub (SPUBLISH; Redis before 7.0): "+
				"wake-ups go to the topics' broadcast channels from now on", "err", err)
		}
	} else {
		w.Complete(err)
	}
	w.retry.add(channel)
}

// unknownCommand reports whether err holds a server's answer that it does
// not know the command name: "ERR unknown command 'spublish', with args ..."
// from Redis 7, with backquotes from Redis 6, the name as it was sent.
func unknownCommand(err error, name string) bool {
	var msg string
	var re ReplyError
	var ge redis.Error
	switch {
	case errors.As(err, &re):
		msg = string(re)
	case errors.As(err, &ge):
		msg = ge.Error()
	default:
		return false
	}
	rest, ok := strings.CutPrefix(msg, "ERR unknown command ")
	if !ok || len(rest) < len(name)+2 {
		return false
	}
	q := rest[0]
	return (q == '\'' || q == '`') && rest[len(name)+1] == q && strings.EqualFold(rest[1:len(name)+1], name)
}

// channelOutcome completes the publications of one topic's wake-ups.
type channelOutcome struct {
	w       *wakeOutcome
	channel string // the topic's broadcast channel
}

// Complete implements Completer.
func (c *channelOutcome) Complete(err error) {
	if err != nil {
		c.w.failedOn(c.channel, err)
	}
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
