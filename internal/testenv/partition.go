package testenv

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Partition is a TCP proxy on a loopback port of its own that forwards every
// connection to a target server, and that can cut the network between the
// two without closing anything: a process that dials Addr instead of the
// server can be partitioned from it while every other process still reaches
// it.
//
// While cut, no byte moves either way. Connections stay open: what either side
// writes waits in the kernel's buffers and the proxy's, and new connections
// are accepted but not forwarded. Heal lets everything through again, late
// and in order, as TCP delivers what it retransmits once a partition ends:
// commands a client gave up on still reach the server then.
type Partition struct {
	t      testing.TB
	ln     net.Listener
	target string

	mu    sync.Mutex
	open  chan struct{} // closed while traffic flows
	done  chan struct{} // closed by Close
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	drop  []byte // DropReplyTo's match, nil once it struck (under mu)
	hits  int    // how many times DropReplyTo struck (under mu)
	// cutOnDrop: DropReplyToAndCut armed the fault (under mu).
	cutOnDrop bool
}

// StartPartition starts a proxy to target (host:port); it is closed, with
// every connection through it, when t ends.
func StartPartition(t testing.TB, target string) *Partition {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("partition proxy to %s: %v", target, err)
	}
	open := make(chan struct{})
	close(open)
	p := &Partition{t: t, ln: ln, target: target, open: open, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is the address to dial instead of the target.
func (p *Partition) Addr() string { return p.ln.Addr().String() }

// Cut stops all traffic through the proxy until Heal.
func (p *Partition) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
		p.open = make(chan struct{})
	default: // already cut
	}
}

// Heal lets the traffic through again, what was held first.
func (p *Partition) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.open:
	default:
		close(p.open)
	}
}

// DropReplyTo arms a one-shot fault: the next chunk a client sends through
// the proxy that holds match reaches the server, and then that client's
// connection breaks before any reply to it is relayed, as when a link fails
// with a request in flight. The server carries the request out; the client
// learns only that its connection closed, and dials again. The server's
// side of the broken connection stays open, its replies dropped, until the
// server ends it or the proxy closes.
func (p *Partition) DropReplyTo(match []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop, p.cutOnDrop = append([]byte(nil), match...), false
}

// DropReplyToAndCut is DropReplyTo, and cuts the proxy (Cut) as it strikes:
// the client cannot dial again until Heal.
func (p *Partition) DropReplyToAndCut(match []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drop, p.cutOnDrop = append([]byte(nil), match...), true
}

// strikes reports whether chunk sets off the armed DropReplyTo, disarming it.
func (p *Partition) strikes(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drop == nil || !bytes.Contains(chunk, p.drop) {
		return false
	}
	p.drop = nil
	p.hits++
	if p.cutOnDrop {
		select {
		case <-p.open:
			p.open = make(chan struct{})
		default: // already cut
		}
	}
	return true
}

// Struck returns how many times DropReplyTo struck.
func (p *Partition) Struck() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits
}

// Close closes the proxy and every connection through it.
func (p *Partition) Close() {
	p.mu.Lock()
	select {
	case <-p.done:
		p.mu.Unlock()
		return
	default:
	}
	close(p.done)
	_ = p.ln.Close()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// pass waits until traffic flows; false once the proxy is closed.
func (p *Partition) pass() bool {
	p.mu.Lock()
	open := p.open
	p.mu.Unlock()
	select {
	case <-open:
		select {
		case <-p.done:
			return false
		default:
			return true
		}
	case <-p.done:
		return false
	}
}

// track records c for Close; false (c closed) once the proxy is closed.
func (p *Partition) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		_ = c.Close()
		return false
	default:
		p.conns[c] = struct{}{}
		return true
	}
}

func (p *Partition) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		_ = c.Close()
	}
}

func (p *Partition) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.t.Logf("partition proxy to %s: accept: %v", p.target, err)
			}
			return
		}
		if !p.track(c) {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve forwards one client connection, dialling the target only once
// traffic flows.
func (p *Partition) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.pass() {
		p.untrack(client)
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		p.untrack(client)
		return
	}
	if !p.track(server) {
		p.untrack(client)
		return
	}
	var halves sync.WaitGroup
	var severed atomic.Bool // DropReplyTo struck this connection
	halves.Add(2)
	go func() { defer halves.Done(); p.pipe(server, client, &severed, true) }()
	go func() { defer halves.Done(); p.pipe(client, server, &severed, false) }()
	halves.Wait()
	p.untrack(client, server)
}

// pipe copies src to dst while traffic flows, holding a chunk read before a
// cut until the heal; at src's end it closes dst's writing half. up says
// whether src is the client. Once severed (DropReplyTo), the server's side
// is read and dropped, and the client's is closed after the chunk that
// struck reached the server.
func (p *Partition) pipe(dst, src net.Conn, severed *atomic.Bool, up bool) {
	buf := make([]byte, 32<<10)
	for {
		if !p.pass() {
			return
		}
		n, err := src.Read(buf)
		if !up && severed.Load() {
			if err != nil {
				return
			}
			continue // the replies the client never gets
		}
		if n > 0 {
			if !p.pass() {
				return
			}
			strikes := up && p.strikes(buf[:n])
			if strikes {
				severed.Store(true)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				_ = src.Close()
				return
			}
			if strikes {
				_ = src.Close() // the client's connection breaks; the server's stays until it ends it
				return
			}
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				_ = tc.CloseWrite()
			} else {
				_ = dst.Close()
			}
			return
		}
	}
}

// MasterOf returns the address of the master that c's slot map names for
// key (c a Cluster client), failing t if it names none: the node to cut
// off, with a Partition, to cut a process off from key.
func MasterOf(t testing.TB, c redis.UniversalClient, key string) string {
	t.Helper()
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("the master of %s: %T is not a Cluster client", key, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := cc.MasterForKey(ctx, key)
	if err != nil {
		t.Fatalf("the master of %s: %v", key, err)
	}
	return m.Options().Addr
}
