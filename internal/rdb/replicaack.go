package rdb

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotReplicated is the outcome of a write that Redis stored but could not
// confirm on enough replicas within the wait (see ReplicaAck): the entry may
// be lost if its master dies now.
var ErrNotReplicated = errors.New("rmq: write not acknowledged by enough replicas")

// ReplicaAck asks every write of entries to wait until Replicas replicas
// have it, for at most Timeout (Redis's WAIT, on the connection that wrote
// the entries, after them). The zero value waits for nothing.
type ReplicaAck struct {
	Replicas int
	Timeout  time.Duration
}

// on reports whether writes wait for replicas.
func (a ReplicaAck) on() bool { return a.Replicas > 0 }

// outcome turns WAIT's reply (the replicas that acknowledged, or the failure
// of the command or its connection) into the outcome of the entries the
// write stored: nil, or ErrNotReplicated wrapping what Redis said.
func (a ReplicaAck) outcome(acked int64, err error) error {
	if err != nil {
		return fmt.Errorf("%w: WAIT %d %d: %w", ErrNotReplicated, a.Replicas, a.Timeout.Milliseconds(), err)
	}
	if acked < int64(a.Replicas) {
		return fmt.Errorf("%w: %d of %d replicas acknowledged within %v", ErrNotReplicated, acked, a.Replicas, a.Timeout)
	}
	return nil
}

// countCompleter is a Completer that also learns the value of an integer
// reply (the stream's reader asks for it).
type countCompleter interface {
	Completer
	CompleteCount(n int64, err error)
}

// ackGroup completes the requests of one stream write that waits for
// replicas: it is written as the completer of each request's ZADD, in order,
// and of the WAIT after them. Once every reply is in (or the connection
// failed them all), each request completes with its ZADD's error, else with
// WAIT's verdict.
type ackGroup struct {
	ack     ReplicaAck
	reqs    []Completer
	errs    []error
	seen    int
	settled chan struct{} // closed once WAIT answered (or its connection failed)
	// due is when requests parked behind the WAIT go anyway (ackpark.go);
	// watched is set once a goroutine waits to bring the writer back for
	// them. Both are the writer's.
	due     time.Time
	watched bool
}

func newAckGroup(ack ReplicaAck, reqs []Completer) *ackGroup {
	return &ackGroup{ack: ack, reqs: append([]Completer(nil), reqs...), errs: make([]error, len(reqs)),
		settled: make(chan struct{}), due: time.Now().Add(ack.Timeout + parkGrace)}
}

// Complete implements Completer.
func (g *ackGroup) Complete(err error) { g.CompleteCount(0, err) }

// CompleteCount implements countCompleter. Replies arrive in order; a failed
// connection completes what it still holds with one error, so counting the
// calls is enough to tell the ZADDs from the WAIT.
func (g *ackGroup) CompleteCount(n int64, err error) {
	if g.seen < len(g.reqs) {
		g.errs[g.seen] = err
		g.seen++
		return
	}
	verdict := g.ack.outcome(n, err)
	for i, r := range g.reqs {
		if g.errs[i] != nil {
			r.Complete(g.errs[i])
		} else {
			r.Complete(verdict)
		}
	}
	close(g.settled)
}

// await waits until g's WAIT answered or its connection failed, at most d.
func (g *ackGroup) await(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-g.settled:
	case <-t.C:
	}
}
