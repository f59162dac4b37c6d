package rdb

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/wait"
)

// MasterWait bounds how long a bounded RoutedPipeline waits for one Cluster
// master (Bounded). go-redis heeds a ctx's deadline on a read only with
// ContextTimeoutEnabled, so without the bound a master out of this
// process's reach would hold the call for the client's ReadTimeout (5 s by
// default), and every master's answers with it.
const MasterWait = 500 * time.Millisecond

// ErrUnanswered is the failure of a command whose Cluster master did not
// answer within MasterWait, or still had a call of the same caller left
// running (masterGate). The command may still run: it is left, not
// cancelled.
var ErrUnanswered = errors.New("rmq: the key's Cluster master did not answer within " + MasterWait.String())

// Unanswered reports whether err says that Redis gave no answer: a
// deadline, a master a bounded call left behind (ErrUnanswered), or a
// network error (a read or dial timing out, a connection refused or reset).
// A cancelled call is not counted: it says nothing of Redis.
func Unanswered(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnanswered) || errors.As(err, &netErr)
}

// masterGate counts, per master address, the bounded calls left running.
// A caller that shares one gate sends nothing to a master while an earlier
// call to it is still out, so a master that stopped answering holds one
// call and one connection of that caller at a time, not one per retry.
type masterGate struct {
	mu  sync.Mutex
	out map[string]int
}

// busy reports whether a call to addr is still out.
func (g *masterGate) busy(addr string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out[addr] > 0
}

// add counts n more calls out to addr (n = -1 when one ends).
func (g *masterGate) add(addr string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.out == nil {
		g.out = make(map[string]int)
	}
	g.out[addr] += n
	if g.out[addr] <= 0 {
		delete(g.out, addr)
	}
}

// Bounded makes Exec wait for each Cluster master at most MasterWait, and
// send nothing to a master while an earlier call of gate's to it is still
// out. A master's pipeline left so reads as unanswered (Answered): its
// commands must not be read, for its call still fills them. On a single
// node it changes nothing: every command waits for the one node anyway.
func (p *RoutedPipeline) Bounded(gate *masterGate) *RoutedPipeline {
	p.gate = gate
	return p
}

// Answered reports whether Exec has the answers of pipe, a pipeline On
// returned. Only a Bounded pipeline leaves one unanswered.
func (p *RoutedPipeline) Answered(pipe redis.Pipeliner) bool {
	return !p.left[pipe]
}

// execAll runs every pipeline, the masters at once, and returns each one's
// commands; nil for one left unanswered (Bounded, Answered).
func (p *RoutedPipeline) execAll(ctx context.Context) [][]redis.Cmder {
	done := make([][]redis.Cmder, len(p.order))
	if p.gate != nil && p.topo != nil {
		p.execWithin(ctx, done)
		return done
	}
	if len(p.order) == 1 {
		done[0], _ = p.order[0].Exec(ctx)
		return done
	}
	var wg sync.WaitGroup
	for i, pipe := range p.order {
		wg.Go(func() { done[i], _ = pipe.Exec(ctx) }) // each command carries its own error
	}
	wg.Wait()
	return done
}

// execWithin is execAll of a Bounded pipeline on a Cluster.
func (p *RoutedPipeline) execWithin(ctx context.Context, done [][]redis.Cmder) {
	calls := make([]*boundedCall, len(p.order))
	for i, pipe := range p.order {
		addr := p.addrs[i]
		if p.gate.busy(addr) {
			continue
		}
		c := &boundedCall{gate: p.gate, addr: addr, answer: make(chan []redis.Cmder, 1)}
		calls[i] = c
		go c.run(func() []redis.Cmder {
			cmds, _ := pipe.Exec(ctx) // each command carries its own error
			return cmds
		})
	}
	stop := make(chan struct{})
	timer := time.AfterFunc(MasterWait, func() { close(stop) })
	defer timer.Stop()
	for i, c := range calls {
		answered := false
		if c != nil {
			done[i], answered = c.await(stop)
		}
		if !answered {
			if p.left == nil {
				p.left = make(map[redis.Pipeliner]bool)
			}
			p.left[p.order[i]] = true
		}
	}
}

// boundedCall is one master's pipeline of a Bounded Exec, or one redirected
// command's follow (followAll).
type boundedCall struct {
	gate   *masterGate
	addr   string
	answer chan []redis.Cmder // capacity 1

	mu            sync.Mutex
	ended, isLeft bool
}

// run makes the call and hands its commands over; if the wait for it ended
// first, it tells the gate that the master answered at last.
func (c *boundedCall) run(call func() []redis.Cmder) {
	c.answer <- call()
	c.mu.Lock()
	c.ended = true
	left := c.isLeft
	c.mu.Unlock()
	if left {
		c.gate.add(c.addr, -1)
	}
}

// await returns the call's commands, or false if stop closes first: the
// call is then left running, counted by the gate until it ends.
func (c *boundedCall) await(stop <-chan struct{}) ([]redis.Cmder, bool) {
	if cmds, ok := wait.Or(c.answer, stop); ok {
		return cmds, true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return <-c.answer, true // it ended meanwhile: sent before ended was set
	}
	c.isLeft = true
	c.gate.add(c.addr, 1)
	return nil, false
}
