package rdb

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// RoutedPipeline pipelines commands by their keys: on a single node, all on
// one pipeline; on a Cluster, each on a pipeline of the master that the
// client's slot map names for its key, on that master's own connections,
// the masters at once.
//
// Not through go-redis's Cluster pipeline: when a node's batch has a command
// redirected (MOVED, ASK) and its first command refused with a retryable
// error (CLUSTERDOWN, LOADING, TRYAGAIN, …), or its connection fails after
// the redirection was read, go-redis v9.23 sends the node's whole batch
// again while also sending the redirected command to its new node: that
// command runs twice, from two goroutines at once (a data race, and an
// increment counted twice). Here each command's refusal is its own: one
// redirected (it did not run) goes again on its own to the master named
// (routedfollow.go); any other error stays with its command.
type RoutedPipeline struct {
	client redis.UniversalClient
	topo   *topology
	// one is a single node's pipeline or, on a Cluster, the client's own for
	// the keys its slot map cannot place (go-redis then reports why on each).
	one   redis.Pipeliner
	pipes map[string]redis.Pipeliner // a Cluster's, by master address
	nodes map[string]*redis.Client   // their masters' clients, by address
	order []redis.Pipeliner
	addrs []string // each pipeline's master address ("" for one)
	gate  *masterGate
	left  map[redis.Pipeliner]bool // those a Bounded Exec left unanswered
	// away are clients of masters that a redirection named and the slot map
	// did not; they close at the end of Exec (awayClosed), so a follow left
	// running makes no more.
	awayMu     sync.Mutex
	away       map[string]*redis.Client
	awayClosed bool
}

// NewRoutedPipeline returns an empty RoutedPipeline of client.
func NewRoutedPipeline(client redis.UniversalClient) *RoutedPipeline {
	return &RoutedPipeline{client: client, topo: topologyOf(client)}
}

// pipeline returns an empty RoutedPipeline of the broker's client, with the
// topology the broker holds (no lookup: a consumer's grouped cycles make one
// per call).
func (b *redisBroker) pipeline() *RoutedPipeline {
	return &RoutedPipeline{client: b.rdb, topo: b.topo}
}

// On returns the pipeline to queue a command on key to.
func (p *RoutedPipeline) On(ctx context.Context, key string) redis.Pipeliner {
	if p.topo != nil {
		node, err := p.topo.client.MasterForKey(ctx, key)
		if err == nil {
			return p.onNode(node)
		}
		p.topo.failed(err)
	}
	if p.one == nil {
		p.one = p.client.Pipeline()
		p.order = append(p.order, p.one)
		p.addrs = append(p.addrs, "")
	}
	return p.one
}

// Exec sends every pipeline, then each command redirected on its own, and
// returns the first error of a command other than redis.Nil (a missing key
// is an answer, not a failure); each command carries its own, except those
// of a master a Bounded Exec left unanswered, or of a pipeline one of
// whose redirected commands it left unanswered (ErrUnanswered; Answered). A
// failure that says the slot map may be stale (a dead master, CLUSTERDOWN,
// …) asks for its reload (topology.failed). It empties
// the pipelines; one left unanswered is emptied by its call, so a
// RoutedPipeline serves one Exec.
func (p *RoutedPipeline) Exec(ctx context.Context) error {
	defer p.closeAway()
	done := p.execAll(ctx)
	if p.topo != nil {
		var moved []redirect
		for i, cmds := range done {
			for _, cmd := range cmds {
				if err := cmd.Err(); err != nil && redirected(err) {
					p.topo.failed(err)
					moved = append(moved, redirect{pipe: p.order[i], cmd: cmd, err: err})
				}
			}
		}
		p.followAll(ctx, moved)
	}
	var first error
	for i, cmds := range done {
		if !p.Answered(p.order[i]) {
			continue // a follow left running still fills its commands
		}
		reported := false // a node's failure asks for a reload of the slot map once
		for _, cmd := range cmds {
			err := cmd.Err()
			if err == nil || errors.Is(err, redis.Nil) {
				continue
			}
			if !reported {
				reported = p.topo.failed(err)
			}
			if first == nil {
				first = err
			}
		}
	}
	if first == nil && len(p.left) > 0 {
		first = ErrUnanswered
	}
	return first
}

// onNode returns the pipeline of a Cluster's master node.
func (p *RoutedPipeline) onNode(node *redis.Client) redis.Pipeliner {
	addr := node.Options().Addr
	pipe := p.pipes[addr]
	if pipe == nil {
		if p.pipes == nil {
			p.pipes = make(map[string]redis.Pipeliner)
			p.nodes = make(map[string]*redis.Client)
		}
		pipe = node.Pipeline()
		if node.Options().MaxRetries > 0 {
			_ = pipe.Process(context.Background(), newNoRetry())
		}
		p.pipes[addr] = pipe
		p.nodes[addr] = node
		p.order = append(p.order, pipe)
		p.addrs = append(p.addrs, addr)
	}
	return pipe
}

// noRetry is a PING that tells go-redis never to send its pipeline again. A
// node client of a Cluster client that sets MaxRetries sends a whole
// pipeline again when its first command is refused (TRYAGAIN, CLUSTERDOWN)
// or a read fails, and so runs the commands that had run (a consumer's pops)
// twice; a pipeline that holds a command whose NoRetry is true is sent once.
// RMQ's callers retry what failed themselves. It leads every pipeline of
// such a node, and costs nothing where the client does not retry (the
// default).
type noRetry struct{ *redis.StatusCmd }

func newNoRetry() noRetry { return noRetry{redis.NewStatusCmd(context.Background(), "ping")} }

// NoRetry implements redis.Cmder.
func (noRetry) NoRetry() bool { return true }
