package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
)

// The in-flight yardstick: what the same ZADDs reach when at most as many
// commands are unanswered as the produce scenario has senders, written by the
// leanest clients there are: raw RESP, no pool, no per-message caller to
// wake. Two shapes:
//   - round trips: each of conns goroutines has a connection of its own,
//     writes depth commands in one write, reads their replies and goes again;
//     every split of the senders into conns × depth is run;
//   - full duplex: one connection, a writer that writes as many commands as
//     are free to go (never more than the senders unanswered) in one write,
//     and a reader that frees them as their replies come.
// The shape with the best median over the rounds is the yardstick a Send from
// that many blocking callers can be held against.

// inflightSplits returns the connections per split of g in-flight commands:
// g, g/2, …, 1 (g × 1 is one command per round trip, as a pool of blocking
// callers sends them; 1 × g is one connection with g pipelined).
func inflightSplits(g int) []int {
	var out []int
	for c := g; c >= 1; c /= 2 {
		if g%c == 0 {
			out = append(out, c)
		}
	}
	return out
}

func inflightName(conns, depth int) string {
	return fmt.Sprintf("raw ZADD, %d conns × %d in flight", conns, depth)
}

// fullDuplexName names the full-duplex shape with g commands in flight.
func fullDuplexName(g int) string {
	return fmt.Sprintf("raw ZADD, full duplex, %d in flight", g)
}

func produceInflight(conns, depth int) func(ctx context.Context, e *env) (metrics, error) {
	return produceZAdds("raw ZADD", func(ctx context.Context, addr string, pl [][]byte) error {
		return zaddInflight(ctx, addr, pl, conns, depth)
	})
}

func produceFullDuplex(g int) func(ctx context.Context, e *env) (metrics, error) {
	return produceZAdds("raw ZADD", func(ctx context.Context, addr string, pl [][]byte) error {
		return zaddFullDuplex(ctx, addr, pl, g)
	})
}

// zaddInflight writes pl as one-member ZADDs into the yardstick's keys (same
// members, keys and scores as bareZAdd) over conns connections, depth
// commands per write, each connection waiting for its replies before the next.
func zaddInflight(ctx context.Context, addr string, pl [][]byte, conns, depth int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, conns)
	var dialErr error
	for c := range conns {
		nc, err := dialRaw(ctx, addr)
		if err != nil {
			dialErr = err
			break
		}
		wg.Go(func() {
			defer nc.Close()
			errs[c] = zaddLoop(nc, pl, depth, &next)
		})
	}
	wg.Wait()
	return errors.Join(append(errs, dialErr)...)
}

// zaddLoop claims depth members at a time until none are left.
func zaddLoop(nc net.Conn, pl [][]byte, depth int, next *atomic.Int64) error {
	rd := bufio.NewReader(nc)
	var b []byte
	for {
		start := int(next.Add(int64(depth)) - int64(depth))
		if start >= len(pl) {
			return nil
		}
		end := min(start+depth, len(pl))
		b = appendRawZAdds(b[:0], pl, start, end)
		if _, err := nc.Write(b); err != nil {
			return err
		}
		for range end - start {
			if err := zaddReply(rd); err != nil {
				return err
			}
		}
	}
}

// zaddFullDuplex writes pl as zaddInflight does, over one connection with
// at most g commands unanswered: the writer sends whatever the reader has
// freed in one write, without waiting for a round trip to end.
func zaddFullDuplex(ctx context.Context, addr string, pl [][]byte, g int) error {
	return zaddDuplex(ctx, []string{addr}, nil, pl, g, false)
}

// zaddDuplex writes pl as zaddFullDuplex does over a connection to each of
// addrs, member i to addrs[route[i]] (route nil: all to addrs[0]), with at
// most g commands unanswered in all. Each write sends whatever the readers
// have freed, one write per connection; in waves, it waits until all g are
// free, so that every write carries as many commands as can be in flight.
func zaddDuplex(ctx context.Context, addrs []string, route []int, pl [][]byte, g int, waves bool) error {
	conns := make([]net.Conn, len(addrs))
	for i, a := range addrs {
		nc, err := dialRaw(ctx, a)
		if err != nil {
			closeAll(conns)
			return err
		}
		conns[i] = nc
	}
	defer closeAll(conns)
	want := make([]int, len(addrs)) // replies each connection reads
	for i := range pl {
		want[routeOf(route, i)]++
	}
	var mu sync.Mutex
	free := sync.NewCond(&mu)
	credits := g
	var failed bool // a reader failed: the writer stops
	ready := func() bool { return failed || (credits > 0 && (!waves || credits == g)) }
	var readErr error
	var readers sync.WaitGroup
	for c, nc := range conns {
		readers.Go(func() {
			rd := bufio.NewReader(nc)
			for range want[c] {
				err := zaddReply(rd)
				mu.Lock()
				if err != nil {
					readErr = errors.Join(readErr, err)
					failed = true
					free.Signal()
					mu.Unlock()
					closeAll(conns) // the other readers stop too
					return
				}
				credits++
				if ready() && (credits == 1 || waves || rd.Buffered() == 0) {
					free.Signal()
				}
				mu.Unlock()
			}
		})
	}
	bufs := make([][]byte, len(conns))
	var writeErr error
	for start := 0; start < len(pl); {
		mu.Lock()
		for !ready() && !(waves && credits > 0 && start+credits >= len(pl)) {
			free.Wait()
		}
		k, stop := credits, failed
		credits = 0
		mu.Unlock()
		if stop {
			break
		}
		end := min(start+k, len(pl))
		for i := start; i < end; i++ {
			c := routeOf(route, i)
			bufs[c] = appendRawZAdd(bufs[c], bareKey(pl[i]), spreadPriority(i), pl[i])
		}
		for c, b := range bufs {
			if len(b) == 0 {
				continue
			}
			if _, err := conns[c].Write(b); err != nil && writeErr == nil {
				writeErr = err
				closeAll(conns) // the readers stop
			}
			bufs[c] = b[:0]
		}
		if writeErr != nil {
			break
		}
		mu.Lock()
		credits += k - (end - start) // credits beyond the last member
		mu.Unlock()
		start = end
	}
	readers.Wait()
	if writeErr != nil {
		return writeErr
	}
	return readErr
}

func routeOf(route []int, i int) int {
	if route == nil {
		return 0
	}
	return route[i]
}

func closeAll(conns []net.Conn) {
	for _, nc := range conns {
		if nc != nil {
			nc.Close()
		}
	}
}

// dialRaw connects to addr; the connection's deadline is ctx's, if any.
func dialRaw(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err == nil {
		if dl, ok := ctx.Deadline(); ok {
			nc.SetDeadline(dl)
		}
	}
	return nc, err
}

// zaddReply reads one reply and fails unless it is an integer (ZADD's).
func zaddReply(rd *bufio.Reader) error {
	line, err := rd.ReadSlice('\n')
	if err == nil && (len(line) == 0 || line[0] != ':') {
		err = fmt.Errorf("ZADD: unexpected reply %q", line)
	}
	return err
}

// appendRawZAdds appends the ZADDs of members start..end-1 of pl, with the
// yardstick's keys and scores.
func appendRawZAdds(b []byte, pl [][]byte, start, end int) []byte {
	for i := start; i < end; i++ {
		b = appendRawZAdd(b, bareKey(pl[i]), spreadPriority(i), pl[i])
	}
	return b
}

func appendRawZAdd(b []byte, key string, score int64, member []byte) []byte {
	var sc [20]byte
	s := strconv.AppendInt(sc[:0], score, 10)
	b = append(b, "*4\r\n$4\r\nZADD\r\n"...)
	b = appendRawBulk(b, []byte(key))
	b = appendRawBulk(b, s)
	return appendRawBulk(b, member)
}

func appendRawBulk(b, s []byte) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, "\r\n"...)
	b = append(b, s...)
	return append(b, "\r\n"...)
}

// reportInflight sets RMQ Send and the best peer against the in-flight
// yardstick (the raw shape with the best median), and says what the 2×
// target asks in its terms.
func reportInflight(rep *report, res *scenarioResults) {
	g := rep.cfg.produceGoroutines
	names := []string{fullDuplexName(g)}
	for _, c := range inflightSplits(g) {
		names = append(names, inflightName(c, g/c))
	}
	shape := bestMedian(res, names...)
	if shape == "" {
		return
	}
	yard := res.perRound(shape, mRate)
	rate := func(name string) []float64 { return res.perRound(name, mRate) }
	rep.printf("The raw ZADD rows are the in-flight yardstick for %d blocking senders: the same members, keys and scores "+
		"as the yardstick, with never more than %d commands unanswered, written by the leanest clients possible "+
		"(raw RESP, no pool, no caller to wake per message). Full duplex: one connection, a writer sending in one "+
		"write whatever replies have freed, a reader freeing them. conns × depth: a goroutine per connection "+
		"writes depth commands in one write and reads their replies before the next. The shape with the "+
		"best median is the yardstick (%s):\n\n", g, g, shape)
	t := newTable(roundHead("Against the in-flight yardstick", res.rounds)...)
	t.add(append([]string{fmt.Sprintf("in-flight yardstick: %s (msgs/s)", shape)}, perRoundCells(yard, num)...)...)
	if res.has(vRMQSend) {
		t.add(append([]string{"**" + vRMQSend + " as % of the in-flight yardstick**"}, perRoundCells(ratios(rate(vRMQSend), yard), pct)...)...)
	}
	var peers [][]float64
	for _, p := range []string{vAsynqEnqueue, vAdjustPublish} {
		if res.has(p) {
			peers = append(peers, rate(p))
		}
	}
	if len(peers) > 0 {
		bestPeer := bestOf(peers...)
		t.add(append([]string{"best peer as % of the in-flight yardstick"}, perRoundCells(ratios(bestPeer, yard), pct)...)...)
		twice := make([]float64, len(bestPeer))
		for i, v := range bestPeer {
			twice[i] = 2 * v
		}
		t.add(append([]string{"2× the best peer as % of the in-flight yardstick"}, perRoundCells(ratios(twice, yard), pct)...)...)
	}
	t.write(rep.w)
}
