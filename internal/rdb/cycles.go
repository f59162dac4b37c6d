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
// the master the slot map names for the first, on its own connections
// (RoutedPipeline, not go-redis's Cluster pipeline, which could run a
// redirected call twice at once): a call redirected (MOVED, ASK: it did not
// run) goes again on its own through the Cluster client, which follows it;
// TRYAGAIN is returned, and the slot waits its move out.
func (b *redisBroker) Cycles(ctx context.Context, calls []*SlotCycle) {
	if len(calls) == 1 {
		c := calls[0]
		c.Res, c.Err = b.Cycle(ctx, c.Keys, c.Req)
		return
	}
	p := b.pipeline()
	pipe := p.On(ctx, calls[0].Keys.Store)
	cmds := make([]*redis.Cmd, len(calls))
	for i, c := range calls {
		cmds[i] = cycleScript.EvalSha(ctx, pipe, c.Keys.cycleKeys(), cycleArgs(c.Req)...)
	}
	_ = p.Exec(ctx) // each command carries its own error
	for i, c := range calls {
		raw, err := cmds[i].Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.Res, c.Err = b.Cycle(ctx, c.Keys, c.Req)
			continue
		}
		c.Res, c.Err = b.cycleResult(raw, err, c.Req.Priority)
	}
}
