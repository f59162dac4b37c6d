package rdb

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// listenNodes is how many masters of a Cluster listenChannels subscribes
// through: a PUBLISH reaches every node, so one live subscription is
// enough, and a second keeps the messages coming while the first one's
// node is dead or out of this process's reach.
const listenNodes = 2

// listenRefresh is how often listenChannels on a Cluster looks at the slot
// map for masters to subscribe through.
const listenRefresh = time.Second

// listenChannels delivers what channels receive, and each (re)subscription,
// until ctx ends. On a single node (topo nil) it is one subscription. On a
// Cluster, go-redis subscribes through the master of one of the channels'
// hash slots, and while that master is dead (until its replica is promoted
// and the slot map reloaded) or out of reach nothing arrives; so it
// subscribes through listenNodes masters at once, chosen from the client's
// slot map and looked at again every listenRefresh, and delivers what
// either receives: every message and (re)subscription arrives about once
// per node. There deliver is called from each node's goroutine, so at
// times from two at once.
//
// It returns as soon as ctx ends, and deliver is not called after that. A
// subscription still being made then (go-redis heeds the ctx of a new
// connection's handshake only with ContextTimeoutEnabled, so one to a
// master out of reach takes the client's timeouts) is left to end on its
// own.
func listenChannels(ctx context.Context, client redis.UniversalClient, topo *topology, channels []string, deliver func(msg any)) {
	gate := &deliverGate{deliver: deliver}
	defer gate.end()
	if topo == nil {
		go subscribe(ctx, client, channels, gate.call)
		<-ctx.Done()
		return
	}
	subs := make(map[string]context.CancelFunc) // by node address
	defer func() {
		for _, stop := range subs {
			stop()
		}
	}()
	for {
		want := listenMasters(ctx, topo)
		for addr, stop := range subs {
			if want[addr] == nil {
				stop()
				delete(subs, addr)
			}
		}
		for addr, node := range want {
			if subs[addr] != nil {
				continue
			}
			nctx, stop := context.WithCancel(ctx)
			subs[addr] = stop
			go subscribe(nctx, node, channels, gate.call)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(listenRefresh):
		}
	}
}

// subscribe subscribes c to channels and delivers what arrives until ctx
// ends.
func subscribe(ctx context.Context, c redis.UniversalClient, channels []string, deliver func(msg any)) {
	ps := c.Subscribe(ctx, channels...)
	defer ps.Close()
	pump(ctx, ps, deliver)
}

// deliverGate passes messages to deliver until end.
type deliverGate struct {
	mu      sync.RWMutex
	ended   bool
	deliver func(msg any)
}

// call delivers m unless the gate has ended; calls may overlap.
func (g *deliverGate) call(m any) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.ended {
		g.deliver(m)
	}
}

// end waits for the calls under way and lets no more through.
func (g *deliverGate) end() {
	g.mu.Lock()
	g.ended = true
	g.mu.Unlock()
}

// listenMasters returns up to listenNodes masters of topo's current slot map
// (no I/O): those of fixed anchor keys, so that the choice stays the same
// until the map changes.
func listenMasters(ctx context.Context, topo *topology) map[string]*redis.Client {
	out := make(map[string]*redis.Client, listenNodes)
	for i := 0; i < 64 && len(out) < listenNodes; i++ {
		node, err := topo.client.MasterForKey(ctx, "rmq-listen:{"+strconv.Itoa(i)+"}")
		if err != nil {
			continue
		}
		out[node.Options().Addr] = node
	}
	return out
}

// pump delivers what ps receives until ctx ends.
func pump(ctx context.Context, ps *redis.PubSub, deliver func(msg any)) {
	msgs := ps.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-msgs:
			deliver(m)
		}
	}
}
