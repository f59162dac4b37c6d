package rdb

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/backoff"
	"github.com/rmq-go/rmq/internal/wait"
)

// Redirections on a Cluster. A master that no longer serves a key's slot
// answers a command on it with MOVED <slot> <addr>; while the slot migrates,
// one whose key has already gone answers ASK <slot> <addr>, and the master
// importing it accepts the command only behind ASKING on the same
// connection. go-redis follows both for its own commands. The send stream
// and SendBatch's per-master pipelines follow them here: the entry goes
// again at once to the node named (Entry.Node), behind ASKING after an ASK
// (Entry.Asking). Asking the client's slot map instead would mostly find it
// not yet reloaded (go-redis reloads it in the background) and send the
// entry back to the old master until the retries ran out, which is what a
// live resharding made of Sends before.

// redirection returns the MOVED or ASK reply err holds (a server's reply,
// ours or go-redis's) and whether it was ASK.
func redirection(err error) (msg string, ask, ok bool) {
	msg, ok = replyError(err)
	switch {
	case !ok:
		return "", false, false
	case strings.HasPrefix(msg, "MOVED "):
		return msg, false, true
	case strings.HasPrefix(msg, "ASK "):
		return msg, true, true
	}
	return "", false, false
}

// redirected reports whether err is a MOVED or ASK reply: the command did not
// run, and may go again at once.
func redirected(err error) bool {
	_, _, ok := redirection(err)
	return ok
}

// clusterDown reports whether err is a CLUSTERDOWN reply: the node serves
// no master for the hash slot right now ("Hash slot not served": a node that
// was reset or removed, or one whose view of a moved slot is not yet
// current) or its Cluster is down. The command did not run.
func clusterDown(err error) bool {
	msg, ok := replyError(err)
	return ok && strings.HasPrefix(msg, "CLUSTERDOWN ")
}

// SlotMoving reports whether err says that a command's hash slot is moving
// between a Cluster's masters, both of them well: TRYAGAIN (a command on
// several keys of a migrating slot, some of them missing on the node asked),
// a MOVED or ASK that go-redis did not follow to its end, or "CLUSTERDOWN
// Hash slot not served" (the node asked counts the slot as nobody's: a node
// forgotten by the Cluster had it in that node's view, until gossip tells
// it the new owner; the reply of a node reset as it leaves, too). Calling
// again shortly succeeds. A slot that stays unserved is a Cluster to mend
// (redis-cli --cluster fix), not a failing node; "CLUSTERDOWN The cluster
// is down" is one of those.
func SlotMoving(err error) bool {
	if redirected(err) {
		return true
	}
	msg, ok := replyError(err)
	return ok && (strings.HasPrefix(msg, "TRYAGAIN") || strings.HasPrefix(msg, "CLUSTERDOWN Hash slot not served"))
}

// slotMoveWait bounds how long a call on one slot's keys waits out its hash
// slot's move (runOnSlot).
const slotMoveWait = 10 * time.Second

// runOnSlot runs script on keys of one slot and calls again while the slot's
// hash slot moves between masters (SlotMoving: a script whose keys are
// partly missing is refused with TRYAGAIN on both sides until the handover),
// pausing backoff.SlotMove, for at most slotMoveWait or until ctx ends; then
// the refusal is returned. go-redis tries three times within some 60 ms,
// which the move of a slot holding many messages outlasts.
func runOnSlot(ctx context.Context, c redis.Scripter, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	deadline := time.Now().Add(slotMoveWait)
	for n := 1; ; n++ {
		cmd := script.Run(ctx, c, keys, args...)
		if !SlotMoving(cmd.Err()) || ctx.Err() != nil || !time.Now().Before(deadline) {
			return cmd
		}
		wait.Sleep(ctx, backoff.SlotMove.Delay(n))
	}
}

// redirectOf returns the address a MOVED or ASK reply in err names and
// whether it was ASK; ok is false for any other error, and for a reply whose
// node announces no address (":port"), which the slot map's reload must then
// resolve.
func redirectOf(err error) (addr string, ask, ok bool) {
	_, addr, ask, ok = redirectSlotOf(err)
	return addr, ask, ok
}

// redirectSlotOf is redirectOf with the hash slot the reply names (as
// written, unchecked).
func redirectSlotOf(err error) (slot, addr string, ask, ok bool) {
	msg, ask, ok := redirection(err)
	if !ok {
		return "", "", false, false
	}
	f := strings.Fields(msg)
	if len(f) != 3 || strings.HasPrefix(f[2], ":") || !strings.Contains(f[2], ":") {
		return "", "", false, false
	}
	return f[1], f[2], ask, true
}

// redirectTo records on e where err sends it next: the node a MOVED or ASK
// named, or (for any other error) the slot map again.
func (e *Entry) redirectTo(err error) {
	addr, ask, ok := redirectOf(err)
	if !ok {
		addr, ask = "", false
	}
	e.Node, e.Asking = addr, ask
}

// optionsAt returns the options of a client of the Cluster's node at addr:
// those of the master the slot map names for key, with addr.
func (t *topology) optionsAt(ctx context.Context, addr, key string) (*redis.Options, error) {
	node, err := t.client.MasterForKey(ctx, key)
	if err != nil {
		return nil, err
	}
	return withAddr(node.Options(), addr), nil
}

// withAddr returns a copy of o for the node at addr.
func withAddr(o *redis.Options, addr string) *redis.Options {
	c := *o
	c.Addr = addr
	return &c
}

// redirectNodes are clients of the nodes that redirections named and the
// slot map did not yet, for SendBatch's pipelines; one unused for
// redirectIdle closes at a later call (its node may have left the Cluster),
// the others with the broker.
type redirectNodes struct {
	mu     sync.Mutex
	byAddr map[string]*redirectClient
	pruned time.Time // when unused clients were last looked for
	closed bool
}

type redirectClient struct {
	*redis.Client
	used time.Time
}

// redirectIdle is how long a redirection's client may go unused before it
// closes.
const redirectIdle = 5 * time.Minute

// at returns a client of the node at addr: the slot map's own if it names
// addr for key, else one of n's.
func (n *redirectNodes) at(ctx context.Context, t *topology, addr, key string) (*redis.Client, error) {
	node, err := t.client.MasterForKey(ctx, key)
	if err != nil {
		return nil, err
	}
	if node.Options().Addr == addr {
		return node, nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	now := time.Now()
	n.prune(now)
	c := n.byAddr[addr]
	if c == nil {
		if n.byAddr == nil {
			n.byAddr = make(map[string]*redirectClient)
		}
		c = &redirectClient{Client: redis.NewClient(withAddr(node.Options(), addr))}
		n.byAddr[addr] = c
	}
	c.used = now
	return c.Client, nil
}

// prune closes the clients unused for redirectIdle, looking at most every
// redirectIdle/5; n.mu is held.
func (n *redirectNodes) prune(now time.Time) {
	if now.Sub(n.pruned) < redirectIdle/5 {
		return
	}
	n.pruned = now
	for addr, c := range n.byAddr {
		if now.Sub(c.used) >= redirectIdle {
			c.Close()
			delete(n.byAddr, addr)
		}
	}
}

// close closes the clients.
func (n *redirectNodes) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	for _, c := range n.byAddr {
		c.Close()
	}
	clear(n.byAddr)
}
