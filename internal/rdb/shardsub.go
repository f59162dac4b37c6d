package rdb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/wait"
)

// Sharded wake-ups on a Cluster. A PUBLISH there is carried over the cluster
// bus to every node, so each wake-up costs every node of the Cluster, and
// more the more nodes it has; a sharded publication (SPUBLISH) goes only to
// the master of its channel's hash slot and that master's replicas. Producers
// therefore publish a slot's wake-ups to the slot's own channel
// (SlotKeys.Wake, in the slot's hash tag), on the connection that stored the
// slot's entries (sendcluster.go), and consumers subscribe to every slot's
// channel on the master that serves it.
//
// go-redis resubscribes all sharded channels of a PubSub in one command after
// a reconnect, which Redis refuses when they lie in different hash slots
// (CROSSSLOT), so the subscriptions here are connections of their own, one
// per master, each carrying an SSUBSCRIBE per channel. Every listenRefresh
// the channels are placed by the client's slot map (no I/O): a master whose
// set of channels changed gets a new connection, as does one whose
// connection failed, so a channel follows its slot through a failover or a
// migration (looked at again within shardRecheck once a node dropped a
// channel, or answered its SSUBSCRIBE with MOVED, whose address the loop
// trusts over a stale map: shardmoves.go), and every
// (re)subscription is delivered, which wakes the slot: wake-ups published
// while a channel was not followed are not lost for long.
// A master that refuses SSUBSCRIBE (Redis before 7.0, an ACL) is asked again
// only every shardUnknownRetry.

// shardPing is how often a sharded subscription is pinged; one whose node
// does not answer within shardPongWait is replaced.
const (
	shardPing     = 15 * time.Second
	shardPongWait = 5 * time.Second
)

// shardUnknownRetry is how long a master that refuses SSUBSCRIBE (unknown
// before Redis 7.0, or an ACL's refusal) is left before its channels are
// asked for again; the topics' broadcast channels carry the wake-ups
// meanwhile (producers turn to them when SPUBLISH is refused: wakeOutcome).
const shardUnknownRetry = time.Minute

// A node drops the sharded channels of a hash slot it gives away
// (SUNSUBSCRIBE), and answers MOVED to an SSUBSCRIBE of one it no longer
// serves (the client's slot map may place a channel by an older view while
// its slot moves), or CLUSTERDOWN once it serves no slot at all (a master
// removed from the Cluster is reset before it shuts down). The subscription keeps its other channels, and the loop
// looks at the slot map again every shardRecheck (asking for its reload)
// until the map places the channel elsewhere, which replaces the
// connections of both masters; after shardDroppedWait the subscription is
// replaced even so, on the old map.
const (
	shardRecheck     = 100 * time.Millisecond
	shardDroppedWait = 5 * time.Second
)

// shardSub is one connection subscribed to the sharded channels one master
// serves.
type shardSub struct {
	addr       string
	channels   []string // sorted
	stop       context.CancelFunc
	done       chan struct{}
	err        error         // why it ended; read after done is closed
	subscribed atomic.Bool   // a subscription was confirmed
	droppedAt  atomic.Int64  // when the node first dropped a channel, Unix ns; 0 if none
	kick       chan struct{} // tells the loop that a channel was dropped

	mu       sync.Mutex
	nc       net.Conn // nil until dialled
	closed   bool
	lastPing time.Time
	moves    []shardMove // the MOVED replies not yet taken by the loop (shardmoves.go)
}

// listenShards follows the sharded channels until ctx ends, handing deliver
// each *redis.Message and each *redis.Subscription (Kind "ssubscribe").
func (b *redisBroker) listenShards(ctx context.Context, channels []string, deliver func(msg any)) {
	channels = slices.Sorted(slices.Values(channels)) // so that each master's share comes sorted
	subs := make(map[string]*shardSub)                // by master address
	failing := make(map[string]bool)                  // masters whose last subscription failed, already logged
	unknown := make(map[string]time.Time)             // masters that refuse SSUBSCRIBE, since when
	toldUnknown := false
	defer func() {
		for _, s := range subs {
			s.close()
		}
		for _, s := range subs {
			<-s.done
		}
	}()
	want := make(map[string][]string)
	nodes := make(map[string]*redis.Options)
	moved := make(map[string]shardMoved) // channels a MOVED sent elsewhere than the slot map
	kick := make(chan struct{}, 1)
	for {
		began := time.Now()
		for _, s := range subs {
			s.noteMoves(moved, began)
		}
		placed := b.placeShards(ctx, channels, moved, want, nodes)
		for addr, s := range subs {
			select {
			case <-s.done:
				if s.subscribed.Load() {
					failing[addr] = false
					delete(unknown, addr)
				}
				if refusedCommand(s.err, "SSUBSCRIBE") || noPermission(s.err) {
					if !toldUnknown {
						b.log.Warn("rmq: a Redis Cluster node refuses sharded pub/sub (SSUBSCRIBE: Redis 7.0 or later, "+
							"and the user's ACL): this consumer hears the wake-ups on the topics' broadcast channels only "+
							"(where producers refused SPUBLISH send them), the idle sweep finds the others; "+
							"the node asked again once a minute", "node", addr, "err", s.err)
						toldUnknown = true
					}
					unknown[addr] = time.Now()
					delete(subs, addr)
					continue
				}
				if bad := s.endedBadly(); bad && ctx.Err() == nil {
					forgetMoves(moved, addr)
					if !failing[addr] {
						b.log.Warn("rmq: sharded wake-up subscription ended", "node", addr, "err", s.err)
						failing[addr] = true
					}
				}
				delete(subs, addr)
				continue
			default:
			}
			if placed && !slices.Equal(want[addr], s.channels) {
				s.close()
				<-s.done
				delete(subs, addr)
			}
		}
		for addr, chans := range want { // empty unless placed: until then what runs stays
			if since, ok := unknown[addr]; ok && time.Since(since) < shardUnknownRetry {
				continue
			}
			if subs[addr] == nil {
				sctx, stop := context.WithCancel(ctx)
				s := &shardSub{addr: addr, channels: slices.Clone(chans), stop: stop, done: make(chan struct{}),
					lastPing: time.Now(), kick: kick}
				subs[addr] = s
				go s.run(sctx, nodes[addr], b.topo, deliver)
			}
		}
		next := listenRefresh
		for addr, s := range subs {
			s.ping()
			if at := s.droppedAt.Load(); at != 0 {
				next = shardRecheck
				if time.Since(time.Unix(0, at)) >= shardDroppedWait {
					s.close() // the map still places its channels there: dial again
					<-s.done
					delete(subs, addr)
				}
			}
		}
		if next < listenRefresh || len(moved) > 0 {
			b.RefreshTopology()
		}
		select {
		case <-ctx.Done():
			return
		case <-kick: // a burst of drops and redirections is placed once
			if wait.Sleep(ctx, shardRecheck-time.Since(began)); ctx.Err() != nil {
				return
			}
		case <-time.After(next):
		}
	}
}

// placeShards fills want with the channels (in their order) by the address
// of the master that the client's slot map names for each, or that a trusted
// MOVED named (moved: placeMoved), and nodes with the options of those
// masters; both are emptied first, their memory kept. It reports false, want
// empty, if some channel's master could not be had.
func (b *redisBroker) placeShards(ctx context.Context, channels []string, moved map[string]shardMoved,
	want map[string][]string, nodes map[string]*redis.Options) bool {
	for addr, chans := range want {
		want[addr] = chans[:0]
	}
	clear(nodes)
	for _, ch := range channels {
		node, err := b.topo.client.MasterForKey(ctx, ch)
		if err != nil {
			b.topo.failed(err)
			clear(want)
			return false
		}
		o := node.Options()
		addr := o.Addr
		if len(moved) > 0 {
			if to := placeMoved(moved, ch, addr); to != addr {
				if nodes[to] == nil {
					nodes[to] = withAddr(o, to)
				}
				want[to] = append(want[to], ch)
				continue
			}
		}
		nodes[addr] = o
		want[addr] = append(want[addr], ch)
	}
	for addr, chans := range want {
		if len(chans) == 0 {
			delete(want, addr)
		}
	}
	return true
}

// run dials the node of o, subscribes to the channels and delivers what
// arrives until the connection ends (closed or failed).
func (s *shardSub) run(ctx context.Context, o *redis.Options, topo *topology, deliver func(msg any)) {
	defer close(s.done)
	cn, err := dialConn(ctx, o, 0)
	if err != nil {
		if s.err = err; ctx.Err() != nil {
			s.err = net.ErrClosed
		} else {
			topo.failed(err)
		}
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cn.nc.Close()
		s.err = net.ErrClosed
		return
	}
	s.nc = cn.nc
	s.mu.Unlock()
	var b []byte
	for _, ch := range s.channels {
		b = appendCommand(b, "SSUBSCRIBE", ch)
	}
	if err = s.write(b); err == nil {
		err = s.read(cn.rd, deliver)
	}
	s.close()
	if s.err = err; !errors.Is(err, net.ErrClosed) {
		topo.failed(err)
	}
}

// read delivers the pushes of the connection until it fails.
func (s *shardSub) read(rd *bufio.Reader, deliver func(msg any)) error {
	var push [3][]byte
	for {
		n, err := readPush(rd, push[:])
		if redirected(err) || clusterDown(err) {
			// a channel's SSUBSCRIBE came after its slot moved away (the slot
			// map placed it by an older view, or the node dropped it and was
			// asked again), or to a node that serves it no longer (reset as it
			// left the Cluster): as if it dropped it; a MOVED says where to
			if m, ok := movedOf(err); ok {
				s.movedTo(m)
			}
			s.dropped()
			continue
		}
		if err != nil {
			return err
		}
		if n < 2 {
			return fmt.Errorf("%w: a push of %d parts", errProtocol, n)
		}
		switch string(push[0]) {
		case "smessage":
			if n == 3 {
				deliver(&redis.Message{Channel: string(push[1]), Payload: string(push[2])})
			}
		case "ssubscribe":
			s.subscribed.Store(true)
			count, _ := strconv.Atoi(string(push[2]))
			deliver(&redis.Subscription{Kind: "ssubscribe", Channel: string(push[1]), Count: count})
		case "sunsubscribe": // the channel's slot moved away: the loop places it again
			s.dropped()
			// the node's MOVED names the new master, which the slot map
			// may not yet know of (shardmoves.go)
			_ = s.write(appendCommand(nil, "SSUBSCRIBE", string(push[1]))) // a failed write fails the read too
		case "pong":
			s.mu.Lock()
			if s.nc != nil {
				s.nc.SetReadDeadline(time.Time{})
			}
			s.mu.Unlock()
		}
	}
}

// endedBadly reports, once run has returned, whether the subscription's end
// is worth a warning: not a close of ours, nor the connection's end after
// the node had dropped channels (a node that gives its slots away and is
// then reset and shut down as it leaves the Cluster, or a node
// restarting), whose channels the loop places again anyway.
func (s *shardSub) endedBadly() bool {
	if errors.Is(s.err, net.ErrClosed) {
		return false
	}
	_, reply := replyError(s.err)
	return reply || s.droppedAt.Load() == 0
}

// dropped records that the node no longer serves one of the channels and
// tells the loop, the first time, to place the channels again.
func (s *shardSub) dropped() {
	if s.droppedAt.CompareAndSwap(0, time.Now().UnixNano()) {
		s.tell()
	}
}

// tell wakes the loop unless it was woken already.
func (s *shardSub) tell() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// write sends b on the connection.
func (s *shardSub) write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.nc == nil {
		return net.ErrClosed
	}
	s.nc.SetWriteDeadline(time.Now().Add(shardPongWait))
	_, err := s.nc.Write(b)
	return err
}

// ping asks the node for a PONG once shardPing has passed since the last
// ask, and gives it shardPongWait to come (read clears the deadline).
func (s *shardSub) ping() {
	s.mu.Lock()
	due := s.nc != nil && !s.closed && time.Since(s.lastPing) >= shardPing
	if due {
		s.lastPing = time.Now()
		s.nc.SetReadDeadline(time.Now().Add(shardPongWait))
	}
	s.mu.Unlock()
	if due {
		_ = s.write(appendCommand(nil, "PING")) // a failed write fails the read too
	}
}

// close ends the connection; run then returns.
func (s *shardSub) close() {
	s.stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		if s.nc != nil {
			s.nc.Close()
		}
	}
}
