package rdb

import (
	"context"
	"fmt"
	"strconv"

	"github.com/rmq-go/rmq/lua"
)

// Actions of an Outcome.
const (
	ActionCommit   = 'c' // the listener succeeded: drop the prepare entry
	ActionRollback = 'r' // the listener failed: retry after Arg ms, or dead
	ActionRestore  = 's' // never handed to a listener: back to store with score Arg
)

// Outcome settles one delivered message.
type Outcome struct {
	Member       []byte
	PrepareScore int64 // the prepare score written by the pop
	Action       byte
	Arg          string // rollback: wait in ms; restore: the original store score
}

// CycleRequest is one call of the cycle script.
type CycleRequest struct {
	Priority   bool   // pop highest score first (else due scores, lowest first)
	KeepFirst  bool   // a restore keeps the lower score (RangeMerge)
	Max        int    // messages to pop; 0 only settles
	TimeoutSec int64  // consume timeout in seconds
	Token      int64  // fencing token; 0 = unfenced
	Waits      string // comma-separated waits in ms before retry 1..16
	Outcomes   []Outcome
}

// Popped is one message moved from store to prepare.
type Popped struct {
	Member []byte
	Score  string // the store score it had, exactly as Redis printed it
}

// CycleResult is what one cycle returned.
type CycleResult struct {
	NowUs      int64 // Redis time when the script ran, in µs
	NowMs      int64 // the same in ms
	NextMs     int64 // when the slot next needs a look; -1 never
	Refused    bool  // a higher fencing token owns the slot; nothing popped
	OwnerToken int64 // that token, when Refused
	Popped     []Popped
}

// Cycle implements Broker.
func (b *redisBroker) Cycle(ctx context.Context, keys SlotKeys, req *CycleRequest) (CycleResult, error) {
	order, merge := "t", "n"
	if req.Priority {
		order = "p"
	}
	if req.KeepFirst {
		merge = "m"
	}
	args := make([]any, 0, 7+3*len(req.Outcomes))
	args = append(args, order, merge, req.Max, req.TimeoutSec, req.Token, req.Waits, len(req.Outcomes))
	for _, o := range req.Outcomes {
		args = append(args, o.Member, o.PrepareScore, string(o.Action)+o.Arg)
	}
	raw, err := lua.Cycle.Run(ctx, b.rdb, []string{keys.Store, keys.Prepare, keys.Retry, keys.Dead, keys.Owner}, args...).Slice()
	if err != nil {
		return CycleResult{}, err
	}
	return parseCycle(raw)
}

// parseCycle decodes the cycle script's reply.
func parseCycle(raw []any) (CycleResult, error) {
	if len(raw) < 2 {
		return CycleResult{}, fmt.Errorf("rmq: cycle script returned %d elements", len(raw))
	}
	now, ok1 := raw[0].(int64)
	next, ok2 := raw[1].(int64)
	if !ok1 || !ok2 {
		return CycleResult{}, fmt.Errorf("rmq: cycle script returned %T, %T", raw[0], raw[1])
	}
	res := CycleResult{NowUs: now, NowMs: now / 1000, NextMs: next}
	if next == -2 {
		res.Refused, res.NextMs = true, -1
		if len(raw) > 2 {
			s, _ := raw[2].(string)
			res.OwnerToken, _ = strconv.ParseInt(s, 10, 64)
		}
		return res, nil
	}
	if (len(raw)-2)%2 != 0 {
		return CycleResult{}, fmt.Errorf("rmq: cycle script returned an odd list of %d", len(raw))
	}
	res.Popped = make([]Popped, 0, (len(raw)-2)/2)
	for i := 2; i < len(raw); i += 2 {
		m, ok1 := raw[i].(string)
		s, ok2 := raw[i+1].(string)
		if !ok1 || !ok2 {
			return CycleResult{}, fmt.Errorf("rmq: cycle script returned %T, %T", raw[i], raw[i+1])
		}
		res.Popped = append(res.Popped, Popped{Member: []byte(m), Score: s})
	}
	return res, nil
}
