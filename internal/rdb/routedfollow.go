package rdb

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// A command of a RoutedPipeline that a master redirected (MOVED, ASK) did
// not run. It goes again to the master the redirection named, on that
// master's own connections (behind ASKING after an ASK), following further
// redirections up to the client's MaxRedirects. Not through the Cluster
// client: one that reads from replicas sends a read-only command to a
// replica of the master its slot map names, whose copy lags the master's
// and, while the slot migrates, no longer holds a key already moved (it
// answers "no such key" for a key that exists). A redirection whose node
// announces no address (":port") goes through the Cluster client, whose
// slot map must resolve it.

// redirect is a command a master redirected, with its pipeline.
type redirect struct {
	pipe redis.Pipeliner
	cmd  redis.Cmder
	err  error
}

// followAll runs each redirected command again where its redirection sends
// it (follow). A Bounded pipeline's follows run at once, each new master
// waited for at most MasterWait and sent nothing while the gate counts a call
// of the same caller to it still out (the command then fails with
// ErrUnanswered), as its first masters were: a new master out of reach
// would otherwise hold the caller for its client's read timeout once per
// redirected command, in turn. A follow left running leaves its command's
// pipeline unanswered (Answered), since it still fills the command.
func (p *RoutedPipeline) followAll(ctx context.Context, moved []redirect) {
	if p.gate == nil {
		for _, m := range moved {
			_ = p.follow(ctx, m.cmd, m.err)
		}
		return
	}
	calls := make([]*boundedCall, len(moved))
	for i, m := range moved {
		addr, _, _ := redirectOf(m.err)
		if p.gate.busy(addr) {
			m.cmd.SetErr(ErrUnanswered)
			continue
		}
		c := &boundedCall{gate: p.gate, addr: addr, answer: make(chan []redis.Cmder, 1)}
		calls[i] = c
		go c.run(func() []redis.Cmder {
			_ = p.follow(ctx, m.cmd, m.err) // the command carries its outcome
			return nil
		})
	}
	if len(moved) == 0 {
		return
	}
	stop := make(chan struct{})
	timer := time.AfterFunc(MasterWait, func() { close(stop) })
	defer timer.Stop()
	for i, c := range calls {
		if c == nil {
			continue
		}
		if _, answered := c.await(stop); !answered {
			if p.left == nil {
				p.left = make(map[redis.Pipeliner]bool)
			}
			p.left[moved[i].pipe] = true
		}
	}
}

// follow runs cmd, which err redirected, again where err sends it and
// returns the error of its last run.
func (p *RoutedPipeline) follow(ctx context.Context, cmd redis.Cmder, err error) error {
	for range max(p.topo.client.Options().MaxRedirects, 1) {
		addr, ask, ok := redirectOf(err)
		var node *redis.Client
		if ok {
			node = p.nodeAt(addr)
		}
		if node == nil {
			return p.client.Process(ctx, cmd)
		}
		if ask {
			pipe := node.Pipeline()
			pipe.Do(ctx, "asking") // a refusal shows in cmd's reply
			_ = pipe.Process(ctx, cmd)
			_, _ = pipe.Exec(ctx)
			err = cmd.Err()
		} else {
			err = node.Process(ctx, cmd)
		}
		if !redirected(err) {
			return err
		}
	}
	return err
}

// nodeAt returns a client of the master at addr: the slot map's, if the
// pipeline used it, else one made with the options of a master it used and
// closed at the end of Exec; nil if it used none, or Exec has ended (a
// follow left running).
func (p *RoutedPipeline) nodeAt(addr string) *redis.Client {
	if node := p.nodes[addr]; node != nil {
		return node
	}
	p.awayMu.Lock()
	defer p.awayMu.Unlock()
	if p.awayClosed {
		return nil
	}
	if node := p.away[addr]; node != nil {
		return node
	}
	for _, used := range p.nodes {
		if p.away == nil {
			p.away = make(map[string]*redis.Client)
		}
		node := redis.NewClient(withAddr(used.Options(), addr))
		p.away[addr] = node
		return node
	}
	return nil
}

// closeAway closes the clients nodeAt made; a follow left running that is
// redirected again goes through the Cluster client.
func (p *RoutedPipeline) closeAway() {
	p.awayMu.Lock()
	defer p.awayMu.Unlock()
	p.awayClosed = true
	for addr, node := range p.away {
		node.Close()
		delete(p.away, addr)
	}
}
