package rdb

import (
	"fmt"
	"math"
	"strconv"
)

// parseCycle decodes the cycle script's reply: {now, next} and the popped
// members, either each with its store score or, in the run form, the runs
// of equal scores first (see cycle.lua's header).
func parseCycle(raw []any, priority bool) (CycleResult, error) {
	if len(raw) < 2 {
		return CycleResult{}, fmt.Errorf("rmq: cycle script returned %d elements", len(raw))
	}
	now, ok1 := raw[0].(int64)
	next, ok2 := raw[1].(int64)
	if !ok1 || !ok2 {
		return CycleResult{}, fmt.Errorf("rmq: cycle script returned %T, %T", raw[0], raw[1])
	}
	held := now < 0 // a negated clock: see cycle.lua's header
	if held {
		now = -now
	}
	res := CycleResult{NowUs: now, NowMs: now / 1000, NextMs: next, HeldBack: held}
	if next == -2 {
		res.Refused, res.NextMs = true, -1
		if len(raw) > 2 {
			res.Owner, _ = raw[2].(string)
		}
		return res, nil
	}
	pop := popReply{second: now / 1e6 * 1000, priority: priority}
	var err error
	if len(raw) > 2 {
		if runs, ok := raw[2].(int64); ok {
			res.Deliveries, err = pop.runs(raw[3:], runs)
			return res, err
		}
	}
	res.Deliveries, err = pop.pairs(raw[2:])
	return res, err
}

// popReply decodes the popped members of one cycle reply.
type popReply struct {
	second   int64 // the pop second * 1000, as in prepare scores
	priority bool
}

// pairs decodes member, score pairs.
func (p popReply) pairs(raw []any) ([]Delivery, error) {
	if len(raw)%2 != 0 {
		return nil, fmt.Errorf("rmq: cycle script returned an odd list of %d", len(raw)+2)
	}
	ds := make([]Delivery, 0, len(raw)/2)
	for i := 0; i < len(raw); i += 2 {
		m, ok1 := raw[i].(string)
		s, ok2 := raw[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("rmq: cycle script returned %T, %T", raw[i], raw[i+1])
		}
		d, err := p.delivery(s)
		if err != nil {
			return nil, fmt.Errorf("rmq: cycle script popped %q: %w", m, err)
		}
		d.Member = []byte(m)
		ds = append(ds, d)
	}
	return ds, nil
}

// runs decodes the run form: n runs (length, score), then the members.
func (p popReply) runs(raw []any, n int64) ([]Delivery, error) {
	if n < 1 || int64(len(raw)) < 2*n {
		return nil, fmt.Errorf("rmq: cycle script returned %d runs in %d elements", n, len(raw)+3)
	}
	members := raw[2*n:]
	ds := make([]Delivery, 0, len(members))
	for i := int64(0); i < n; i++ {
		length, ok1 := raw[2*i].(int64)
		s, ok2 := raw[2*i+1].(string)
		if !ok1 || !ok2 || length < 1 || int64(len(ds))+length > int64(len(members)) {
			return nil, fmt.Errorf("rmq: cycle script returned run %v, %v of %d members", raw[2*i], raw[2*i+1], len(members))
		}
		d, err := p.delivery(s)
		if err != nil {
			return nil, fmt.Errorf("rmq: cycle script popped a run: %w", err)
		}
		for _, v := range members[len(ds) : len(ds)+int(length)] {
			m, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("rmq: cycle script returned %T for a member", v)
			}
			d.Member = []byte(m)
			ds = append(ds, d)
		}
	}
	if len(ds) != len(members) {
		return nil, fmt.Errorf("rmq: cycle script returned runs of %d for %d members", len(ds), len(members))
	}
	return ds, nil
}

// delivery decodes a popped member's store score the way cycle.lua wrote
// its prepare entry: retries left are the score while it is at most
// MaxRetries, else MaxRetries (a first delivery). Member is left to the
// caller.
func (p popReply) delivery(score string) (Delivery, error) {
	f, err := strconv.ParseFloat(score, 64)
	if err != nil {
		return Delivery{}, fmt.Errorf("score %q: %w", score, err)
	}
	d := Delivery{RetriesLeft: MaxRetries, score: score}
	switch {
	case f <= MaxRetries:
		d.RetriesLeft = int(math.Floor(f))
	case p.priority:
		d.Priority = int64(f)
	default:
		d.DueMs = int64(f)
	}
	// A message popped ahead of its due time counts from its due second.
	d.prepare = max(p.second, d.DueMs/1000*1000) + int64(d.RetriesLeft)
	return d, nil
}
