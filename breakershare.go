package rmq

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// A breaker is each process's own, so every process shares in Redis
// (Keyspace.BreakerStates), with each flush of its metrics (every
// statsFlushEvery), the state of each of its breakers that is not closed,
// and the time by its clock; it deletes the entry when the breaker closes
// and when it stops consuming. Readers ignore an entry older than
// breakerShareMaxAge: its process died, or lost Redis, with the breaker not
// closed. (The hosts' clocks are assumed to agree within a few seconds.)
const breakerShareMaxAge = 10 * time.Second

// ProcessBreaker is one process's breaker of a topic that is open or
// half-open now, as the process shared it in Redis.
type ProcessBreaker struct {
	// Process names the process: "<coordinator>/<host>:<pid>:<client>", as
	// its presence entry.
	Process string
	// State is BreakerOpen or BreakerHalfOpen.
	State string
	// At is when the process shared it (every 2 s while it lasts), by the
	// process's clock.
	At time.Time
}

// OpenBreakers returns the processes of the namespace whose breaker of
// topic is open or half-open now, sorted by process: one Redis read. A
// process shares its state within 2 s of a change; an entry not renewed for
// 10 s is left out.
func (c *Client) OpenBreakers(ctx context.Context, topic string) ([]ProcessBreaker, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	t, err := c.lookupTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	fields, err := c.broker.BreakerStates(ctx, t.Name)
	if err != nil {
		return nil, fmt.Errorf("rmq: breaker states of topic %q: %w", topic, err)
	}
	now := time.Now()
	var out []ProcessBreaker
	for process, v := range fields {
		state, at, ok := strings.Cut(v, "|")
		ms, err := strconv.ParseInt(at, 10, 64)
		if !ok || err != nil || (state != BreakerOpen && state != BreakerHalfOpen) {
			continue
		}
		if when := time.UnixMilli(ms); now.Sub(when) <= breakerShareMaxAge {
			out = append(out, ProcessBreaker{Process: process, State: state, At: when})
		}
	}
	slices.SortFunc(out, func(a, b ProcessBreaker) int { return strings.Compare(a.Process, b.Process) })
	return out, nil
}

// shareBreakers writes the state of each of the client's breakers that is
// not closed while it consumes, and deletes the entries it wrote before
// once their breaker closed or consumption ended (flusher goroutine, or
// close once it stopped).
func (f *statsFlusher) shareBreakers(ctx context.Context) {
	c := f.c
	c.mu.Lock()
	subs, consuming := maps.Clone(c.subs), c.state == stateStarted // Subscribe may add to it meanwhile
	c.mu.Unlock()
	now := time.Now()
	var shares []rdb.BreakerShare
	next := make(map[string]string)
	for name, s := range subs {
		state := ""
		if b := s.flow.breaker; b != nil && consuming {
			if st := b.State(); st == BreakerOpen || st == BreakerHalfOpen {
				state = st
			}
		}
		if state != "" {
			next[name] = state
			shares = append(shares, rdb.BreakerShare{Topic: name, State: state, AtMs: now.UnixMilli()})
		} else if f.breakers[name] != "" {
			shares = append(shares, rdb.BreakerShare{Topic: name}) // closed again, or stopped: delete it
		}
	}
	if len(shares) == 0 {
		return
	}
	sent := time.Now()
	err := c.broker.ShareBreakers(ctx, c.processID(), shares)
	f.heard(err, sent)
	if err != nil {
		c.cfg.logger.Warn("rmq: sharing breaker states failed; they go with the next flush", "err", err)
		return
	}
	f.breakers = next
}
