package rmq

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rmq-go/rmq/coordinator"
	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/rdb"
	"github.com/rmq-go/rmq/internal/wait"
)

// Presence: while it consumes, every client keeps an entry in the namespace's
// presence set (Keyspace.Presence) naming its coordinator's kind, renewed
// every presenceRenew and gone presenceTTL after the last renewal. Start
// refuses (ErrNamespaceBusy) to consume beside a process it cannot share the
// namespace with: a process of the local coordinator shares it with nobody,
// and processes of different coordinators do not share one either. A local
// process also counts the Redis coordinator's unexpired members, whose
// leases outlast their entries (presence.lua; the coordinator's join
// refuses a member beside a local entry in turn: join.lua).
const (
	presenceTTL   = 3 * time.Second
	presenceRenew = time.Second
)

// presence is one client's entry in the presence set.
type presence struct {
	co     rdb.Coordination
	me     string // "<kind>/<host>:<pid>:<nonce>"
	topics []string
	log    func(msg string, args ...any)
	warn   func(msg string, args ...any) // a long wait for the namespace's keys
	debug  func(msg string, args ...any) // a failed renewal, a refusal while the keys move
	// alone: this client's coordinator (the local one) shares the namespace
	// with nobody, so it is the one to stop when a renewal finds a neighbour
	// (one cut off from Redis past presenceTTL, now back): yield is called.
	alone bool
	yield func(other string)
	// clock, if set, learns the Redis clock from each join and renewal.
	clock *redisClock
	// vouch, if set, is told after each join or renewal that found the
	// namespace this process's alone until when that holds for sure: the
	// call's send time plus the entry's TTL, less a tenth for clock rates
	// (Member.Exclusive, the local coordinator's leases).
	vouch func(until time.Time)
}

// heard passes the Redis clock read by a call sent at sent, answered now,
// to the client's clock (none when the call failed: nowUs 0).
func (p *presence) heard(nowUs int64, sent time.Time) {
	if p.clock != nil {
		p.clock.note(nowUs, sent, time.Now())
	}
}

// vouched tells vouch how long the entry written by a call sent at sent
// lasts, for sure.
func (p *presence) vouched(sent time.Time) {
	if p.vouch != nil {
		p.vouch(sent.Add(presenceTTL - presenceTTL/10))
	}
}

func (c *Client) newPresence(subs map[string]*subscription) *presence {
	p := &presence{co: c.coord, me: c.processID(), log: c.cfg.logger.Error, warn: c.cfg.logger.Warn,
		debug: c.cfg.logger.Debug, clock: &c.clock}
	p.alone = strings.HasPrefix(p.me, "local/")
	for name := range subs {
		p.topics = append(p.topics, name)
	}
	slices.Sort(p.topics)
	return p
}

// processID names this client among the processes of the namespace:
// "<coordinator kind>/<host>:<pid>:<client>", its presence entry.
func (c *Client) processID() string {
	kind := "custom"
	if k, ok := c.cfg.coordinator.(coordinator.Kinded); ok {
		kind = k.Kind()
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%s:%d:%p", kind, host, os.Getpid(), c)
}

// presenceMoveWarn is how long join waits for the namespace's keys to be
// whole again, while a Cluster's resharding moves them, before it says so
// at Warn (and again every presenceMoveWarn).
const presenceMoveWarn = 5 * time.Second

// join adds the entry. A conflicting neighbour may be a process that just
// crashed, whose entry outlives it by presenceTTL at most: join waits that
// long for it to go before it fails with ErrNamespaceBusy. A failing Redis
// is tried five times before join fails; a refusal while the namespace's
// hash slot moves between two Cluster masters (its keys split: TRYAGAIN) is
// waited out, as the coordinator waits it out (rdb.SlotMoves).
func (p *presence) join(ctx context.Context) error {
	deadline := time.Now().Add(presenceTTL + presenceRenew/2)
	var moves rdb.SlotMoves
	for attempt := 1; ; {
		sent := time.Now()
		other, now, err := p.co.Presence(ctx, p.me, presenceTTL, "join", p.topics...)
		p.heard(now, sent)
		pause, debug, warn, moving := moves.Refused(err, time.Now(), presenceMoveWarn)
		switch {
		case err == nil && other == "":
			p.vouched(sent)
			return nil
		case err == nil && time.Now().After(deadline):
			return fmt.Errorf("%w: %s consumes it (this process: %s)", ErrNamespaceBusy, other, p.me)
		case moving && warn:
			p.warn("rmq: recording this process's presence refused while the namespace's hash slot moves, for a "+
				"while now; consuming once it is whole (a migration left open? redis-cli --cluster fix)",
				"for", moves.Lasted(time.Now()).Round(time.Millisecond), "err", err)
		case moving && debug:
			p.debug("rmq: recording this process's presence refused while the namespace's hash slot moves; "+
				"trying again soon", "err", err)
		case err != nil && attempt >= 5:
			return fmt.Errorf("rmq: record presence: %w", err)
		}
		if !moving {
			moves.Reset()
			pause = min(backoff.Redis.Delay(attempt), presenceRenew/2)
			attempt++
		}
		wait.Sleep(ctx, pause)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// renew keeps the entry until ctx ends, then removes it, unless Redis left
// the last renewal unanswered: the entry then expires by itself within
// presenceTTL, where the removal would wait out the client's timeouts
// whatever its ctx (a redial's handshake: go-redis's DialTimeout). Each
// renewal is bounded by presenceTTL, past which it renews nothing (and
// go-redis stops retrying), so that it reports a Redis out of reach.
func (p *presence) renew(ctx context.Context) {
	cut := false // Redis left the renewals unanswered (unansweredNote)
	for ctx.Err() == nil {
		wait.Sleep(ctx, presenceRenew)
		if ctx.Err() != nil {
			break
		}
		call, cancel := context.WithTimeout(ctx, presenceTTL)
		sent := time.Now()
		other, now, err := p.co.Presence(call, p.me, presenceTTL, "renew", p.topics...)
		p.heard(now, sent)
		cancel()
		cut = unansweredNote(cut, err, time.Since(sent))
		if err != nil && ctx.Err() == nil && p.debug != nil {
			// Redis failing: the consumers and the coordinator report it;
			// the entry outlives a few failed renewals
			p.debug("rmq: renewing the presence entry failed; trying again in a second", "err", err)
		}
		if err == nil && other == "" {
			p.vouched(sent)
		}
		if err == nil && other != "" {
			// Never again: a neighbour that leaves while this process
			// drains may have served its slots meanwhile.
			p.vouch = nil
			p.log("rmq: another process consumes this namespace and cannot share it", "this", p.me, "other", other)
			if p.alone && p.yield != nil {
				p.yield(other)
				p.yield = nil
			}
		}
	}
	if cut {
		return
	}
	leave, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _, _ = p.co.Presence(leave, p.me, 0, "leave") // if it fails, the entry expires
}
