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
func (b *redisBroker) Cycles(ctx context.Context, calls []*SlotCycle) {
	if len(calls) == 1 {
		c := calls[0]
		c.Res, c.Err = b.Cycle(ctx, c.Keys, c.Req)
		return
	}
	cmds := make([]*redis.Cmd, len(calls))
	// Each command carries its own error; the pipeline's is the first of them.
	_, _ = b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = cycleScript.EvalSha(ctx, p, c.Keys.cycleKeys(), cycleArgs(c.Req)...)
		}
		return nil
	})
	for i, c := range calls {
		raw, err := cmds[i].Slice()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.Res, c.Err = b.Cycle(ctx, c.Keys, c.Req)
			continue
		}
		c.Res, c.Err = b.cycleResult(raw, err, c.Req.Priority)
	}
}
