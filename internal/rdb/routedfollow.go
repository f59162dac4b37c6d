package rdb

import (
	"context"

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
// closed at the end of Exec; nil if it used none.
func (p *RoutedPipeline) nodeAt(addr string) *redis.Client {
	if node := p.nodes[addr]; node != nil {
		return node
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

// closeAway closes the clients nodeAt made.
func (p *RoutedPipeline) closeAway() {
	for addr, node := range p.away {
		node.Close()
		delete(p.away, addr)
	}
}
