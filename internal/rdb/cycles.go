package rdb

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// SlotCycle is one slot's call in a Cycles batch, with what it returned.
type SlotCycle struct {
	Keys SlotKeys
	Req  *CycleRequest
	Res  CycleResult
	Err  error
}

// Cycles implements Broker: one pipeline of EVALSHAs, so that Redis reads
// and runs them in one go. A call the server answers NOSCRIPT (it lost the
// script: a restart or failover) did not run; it goes again on its own,
// which sends the script.
//
// On a Cluster the calls (a group of one master's slots) are pipelined to
// the master the slot map names for the first, on its own connection, not
// through the Cluster client's pipeline: that one re-sends a node's whole
// batch when its first command is refused with TRYAGAIN (a slot in
// migration) while also sending a redirected command of the batch to its
// new node, so one command ran twice, from two goroutines at once (a data
// race in go-redis v9.23). Here each call's refusal is its own: one
// redirected (MOVED, ASK: it did not run) goes again on its own through the
// Cluster client, which follows it; TRYAGAIN is returned, and the slot waits
// its move out.
func (b *redisBroker) Cycles(ctx context.Context, calls []*SlotCycle) {
	if len(calls) == 1 {
		c := calls[0]
		c.Res, c.Err = b.Cycle(ctx, c.Keys, c.Req)
		return
	}
	pipe, err := b.groupPipeline(ctx, calls[0].Keys)
	if err != nil {
		for _, c := range calls {
			c.Res, c.Err = CycleResult{}, err
		}
		return
	}
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = cycleScript.EvalSha(ctx, pipe, c.Keys.cycleKeys(), cycleArgs(c.Req)...)
	}
	// Each command carries its own error; the pipeline's is the first of them.
	_, _ = pipe.Exec(ctx)
	for i, c := range calls {
		raw, err := cmds[i].Slice()
		if err != nil && (redis.HasErrorPrefix(err, "NOSCRIPT") || (b.topo != nil && redirected(err))) {
			b.topo.failed(err)
			c.Res, c.Err = b.Cycle(ctx, c.Keys, c.Req)
			continue
		}
		c.Res, c.Err = b.cycleResult(raw, err, c.Req.Priority)
	}
}

// groupPipeline returns the pipeline of a group of calls led by the slot of
// keys: the client's own on a single node; on a Cluster, one on the
// connections of the master that the slot map names for that slot.
func (b *redisBroker) groupPipeline(ctx context.Context, keys SlotKeys) (redis.Pipeliner, error) {
	if b.topo == nil {
		return b.rdb.Pipeline(), nil
	}
	node, err := b.topo.client.MasterForKey(ctx, keys.Store)
	if err != nil {
		b.topo.failed(err)
		return nil, err
	}
	return node.Pipeline(), nil
}
