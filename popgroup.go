package rmq

import (
	"context"
	"time"

	"github.com/rmq-go/rmq/internal/rdb"
)

// groupShare: a pop that reaches ahead (WithLookahead) takes along, in the
// same round trip, the thread's other slots whose next look is due within
// this share of the lookahead. A Redis call costs the server far more when it
// wakes it than when it follows another, and each call wakes the consuming
// process once more: at low rates a thread's slots then cost one round trip
// per lookahead between them instead of one each. Their windows end together
// from then on, so they stay in step; a slot popped early pops again at most
// that much sooner.
const groupShare = 4

// groupCalls returns lead with the pops of the slots it takes along (see
// groupShare), each admitted by the topic's flow control as serve would. On
// a Cluster a group holds the slots of the lead's master only.
func (t *thread) groupCalls(lead *popCall) []*popCall {
	calls := []*popCall{lead}
	if lead.req.Ahead <= 0 {
		return calls
	}
	now := lead.sent
	horizon := now.Add(t.sub.lookahead / groupShare)
	node := t.sub.c.broker.Node(*lead.s.keys)
	for _, s := range t.order {
		if s == lead.s || !t.joins(s, now, horizon) || t.sub.c.broker.Node(*s.keys) != node {
			continue
		}
		if t.sub.flow.paused.Load() {
			break
		}
		admitted, probe, _ := t.admit(t.sub.batchSize(), now)
		if admitted == 0 {
			break
		}
		ahead := t.ahead(probe)
		if ahead <= 0 {
			t.admitted(admitted, 0, probe)
			break
		}
		c := &popCall{s: s, req: t.request(s, admitted), sent: now, admitted: admitted, probe: probe}
		c.req.Ahead = ahead
		calls = append(calls, c)
	}
	return calls
}

// joins reports whether s may pop along with another slot of its thread at
// now: its next look is due by horizon, and serve would pop it then (not
// deliver a held message, back off from its node, or let it go).
func (t *thread) joins(s *slotState, now, horizon time.Time) bool {
	switch {
	case s.busy != nil, s.parked, s.heldDue(now), s.next.After(horizon):
		return false
	case s.lease.IsRevoked(), !s.lease.Valid():
		return false
	}
	_, held := t.heldBack(s, now)
	return !held
}

// runPops runs the cycles of calls, one slot's alone and a group's in one
// pipeline, and sets each call's result and when it arrived. A failure that
// every call of a group shares counts once towards the node's backoff (a
// slot's move is its own: nodebackoff.go).
func (t *thread) runPops(hard context.Context, calls []*popCall) {
	if len(calls) == 1 {
		c := calls[0]
		c.res, c.err = t.cycle(hard, c.s, c.req)
		c.recv = time.Now()
		return
	}
	batch := make([]*rdb.SlotCycle, len(calls))
	for i, c := range calls {
		batch[i] = &rdb.SlotCycle{Keys: *c.s.keys, Req: c.req}
	}
	if g := &t.sub.c.consumers; g.enter() {
		t.sub.c.broker.Cycles(hard, batch)
		g.leave()
	} else {
		for _, b := range batch {
			b.Err = ErrClosed
		}
	}
	recv := time.Now()
	latest := int64(0) // the Redis clock read last in the group, µs
	for _, b := range batch {
		latest = max(latest, b.Res.NowUs)
	}
	for i, c := range calls {
		c.res, c.err, c.recv = batch[i].Res, batch[i].Err, recv
		c.counted = i > 0 && c.err != nil && calls[0].err != nil && !rdb.SlotMoving(calls[0].err)
		if c.res.NowUs > 0 && !t.sub.c.multiNode {
			// recv bounds when the last clock was read, not the earlier ones:
			// counting from the last keeps each message's due time
			// (recv + due − clock) never early, and no later than it must be.
			// Not on a Cluster: a call redirected to another master read
			// another clock, which may run ahead of this one's.
			c.res.NowUs = latest
		}
	}
}
