package failover_test

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// statePoll is how often a stateWatch asks for CLUSTER INFO.
const statePoll = 20 * time.Millisecond

// stateWatch polls a Cluster node's CLUSTER INFO every statePoll and records
// the spans in which it reported cluster_state:fail: then the node refuses
// every command with CLUSTERDOWN.
type stateWatch struct {
	addr   string
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	spans  []stateSpan
	failed int // polls without a reply
}

// stateSpan is a span of cluster_state:fail: from the first poll that saw it
// to the first that saw cluster_state:ok again (zero if none did).
type stateSpan struct{ from, to time.Time }

// watchClusterState starts polling the node at addr.
func watchClusterState(addr string) *stateWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &stateWatch{addr: addr, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
		defer c.Close()
		for {
			info, err := c.ClusterInfo(ctx).Result()
			w.record(info, err, time.Now())
			select {
			case <-ctx.Done():
				return
			case <-time.After(statePoll):
			}
		}
	}()
	return w
}

// record notes one poll's outcome at when it returned.
func (w *stateWatch) record(info string, err error, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	open := len(w.spans) > 0 && w.spans[len(w.spans)-1].to.IsZero()
	switch {
	case err != nil:
		w.failed++
	case strings.Contains(info, "cluster_state:fail"):
		if !open {
			w.spans = append(w.spans, stateSpan{from: at})
		}
	case strings.Contains(info, "cluster_state:ok"):
		if open {
			w.spans[len(w.spans)-1].to = at
		}
	}
}

// stop ends the watch and returns the spans of cluster_state:fail and how
// many polls had no reply.
func (w *stateWatch) stop() ([]stateSpan, int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]stateSpan(nil), w.spans...), w.failed
}

// refusal is a span in which a node refused commands (cluster_state:fail),
// as offsets from t0; to is never if it had not ended when the watch
// stopped.
type refusal struct {
	node     string
	from, to time.Duration
}

// clusterStates is what the state watches of a run saw.
type clusterStates struct {
	nodes    []string // the nodes watched
	refusals []refusal
	noReply  map[string]int // node → polls without a reply
}

// startStateWatches watches each of nodes; the returned function stops the
// watches and returns what they saw.
func (r *failoverRun) startStateWatches(nodes []string) func() clusterStates {
	var ws []*stateWatch
	for _, n := range nodes {
		ws = append(ws, watchClusterState(n))
	}
	r.t.Cleanup(func() { // in case the run ends early; stop may run twice
		for _, w := range ws {
			w.stop()
		}
	})
	return func() clusterStates {
		cs := clusterStates{nodes: nodes, noReply: map[string]int{}}
		for _, w := range ws {
			spans, failed := w.stop()
			cs.noReply[w.addr] = failed
			for _, s := range spans {
				to := never
				if !s.to.IsZero() {
					to = r.since(s.to)
				}
				cs.refusals = append(cs.refusals, refusal{node: w.addr, from: r.since(s.from), to: to})
			}
		}
		return cs
	}
}

// window returns the first refusal's start and the last one's end over all
// watched nodes (end never if one had not ended); ok is false if there was
// none.
func (cs clusterStates) window() (from, to time.Duration, ok bool) {
	for i, f := range cs.refusals {
		if i == 0 || f.from < from {
			from = f.from
		}
		if i == 0 || to != never && (f.to == never || f.to > to) {
			to = f.to
		}
	}
	return from, to, len(cs.refusals) > 0
}
