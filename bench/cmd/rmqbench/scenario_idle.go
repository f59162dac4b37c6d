package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rmq-go/rmq"
)

// Idle cost: one worker (one thread) owning every slot of a 1,024-slot
// FixedTime topic with nothing to do. We count the commands it sends (a
// go-redis hook on its client) and the commands Redis executes for it (INFO
// commandstats, which since Redis 7 also counts the commands a Lua script
// runs), and send a few FixedTime messages during the window to show it
// stays punctual while it sleeps.

const (
	idleSlots    = 1024
	idleWarmup   = 5 * time.Second
	idleMessages = 10
	idleAhead    = time.Second

	vIdleRMQ = "RMQ"
)

var idleScenario = &scenario{
	key: "idle",
	variants: func(*config) []variant {
		return []variant{{"rmq", vIdleRMQ, idleRMQ}}
	},
	report: reportIdle,
}

// countHook counts the commands a go-redis client sends (each command of a pipeline counts).
type countHook struct{ n atomic.Int64 }

func (h *countHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

const (
	mIdleEvalPerSlot = "evalsha_per_slot_s"
)

// openIdleProducer opens the idle scenario's producer, whose commands hook
// counts, to be subtracted from what Redis executed: through go-redis's
// pipelines, since the send stream's commands pass no hook (WithSendStream).
func openIdleProducer(e *env, hook redis.Hook) (*rmqSystem, error) {
	return openRMQ(e, hook, rmq.WithSendStream(false))
}

func idleRMQ(ctx context.Context, e *env) (metrics, error) {
	const topic = "idle"
	var workerCmds, producerCmds countHook
	w, err := openRMQ(e, &workerCmds)
	if err != nil {
		return nil, err
	}
	p, err := openIdleProducer(e, &producerCmds)
	if err != nil {
		return nil, errors.Join(err, w.close())
	}
	closeAll := func(err error) error { return errors.Join(err, p.close(), w.close()) }
	if err := w.define(ctx, topic, idleSlots, rmq.FixedTime); err != nil {
		return nil, closeAll(err)
	}
	spacing := e.idleWindow / idleMessages
	due := make([]time.Time, idleMessages)
	l := newLateness(due)
	listener := rmq.ListenerFunc(func(_ context.Context, m *rmq.Message) error {
		l.record(m.Content, time.Now())
		return nil
	})
	if err := w.c.Subscribe(topic, listener, rmq.WithThreads(1)); err != nil {
		return nil, closeAll(err)
	}
	w.start()
	time.Sleep(idleWarmup) // the start wakes every slot once; let that pass

	before, err := commandStats(ctx, e.admin)
	if err != nil {
		return nil, closeAll(err)
	}
	w0, p0 := workerCmds.n.Load(), producerCmds.n.Load()
	start := time.Now()
	for i := range idleMessages {
		time.Sleep(time.Until(start.Add(time.Duration(i) * spacing)))
		d := time.Now().Add(min(idleAhead, spacing/2)).Truncate(time.Millisecond)
		l.mu.Lock()
		due[i] = d
		l.mu.Unlock()
		msg := rmq.FixedTimeMessage{Topic: topic, Content: payload("i", i), FixedTime: d}
		if err := p.c.Producer().Send(ctx, msg); err != nil {
			return nil, closeAll(err)
		}
	}
	time.Sleep(time.Until(start.Add(e.idleWindow)))
	after, err := commandStats(ctx, e.admin)
	elapsed := time.Since(start).Seconds()
	if err != nil {
		return nil, closeAll(err)
	}
	issued := float64(workerCmds.n.Load() - w0)
	delta := statsDelta(before, after)
	var server float64
	for name, st := range delta {
		if name != "info" { // our own measurement
			server += float64(st.Calls)
		}
	}
	server -= float64(producerCmds.n.Load() - p0) // the producer's ZADDs and PUBLISHes
	m := l.metrics()
	m[mIssuedPerSec] = issued / elapsed
	m[mServerPerSec] = server / elapsed
	m[mIssuedPerSlot] = issued / elapsed / idleSlots
	m[mServerPerSlot] = server / elapsed / idleSlots
	m[mIdleEvalPerSlot] = float64(delta["evalsha"].Calls+delta["eval"].Calls) / elapsed / idleSlots
	if m[mMissing] > 0 {
		return m, closeAll(fmt.Errorf("%v of %d messages sent while idle were not delivered", m[mMissing], idleMessages))
	}
	return m, closeAll(nil)
}

func reportIdle(rep *report, res *scenarioResults) {
	if !res.has(vIdleRMQ) {
		return
	}
	rep.printf("## 5. Idle cost\n\n")
	rep.printf("One RMQ client with one thread owning all %s slots of an empty FixedTime topic (default idle poll, 3 s), "+
		"measured over %s after a %s warm-up. \"Sent by the worker\" counts the commands its go-redis client sends "+
		"(a hook; one EVALSHA per slot visit). \"Executed by Redis\" is the INFO commandstats delta, which since Redis 7 "+
		"also counts every command a Lua script runs, minus our INFO calls and the producer's commands. During the window "+
		"a second client sends %d FixedTime messages, one every %s, each due %s later; their lateness shows the worker "+
		"stays punctual while it sleeps.\n\n",
		thousands(idleSlots), rep.cfg.idleWindow, idleWarmup, idleMessages, rep.cfg.idleWindow/idleMessages,
		min(idleAhead, rep.cfg.idleWindow/idleMessages/2))
	t := newTable("Measure", "median (min–max)")
	t.add("commands/s sent by the worker", stat(res.values(vIdleRMQ, mIssuedPerSec), num))
	t.add("… per idle slot", stat(res.values(vIdleRMQ, mIssuedPerSlot), num))
	t.add("EVALSHA/s per idle slot (commandstats)", stat(res.values(vIdleRMQ, mIdleEvalPerSlot), num))
	t.add("commands/s executed by Redis, Lua-internal included", stat(res.values(vIdleRMQ, mServerPerSec), num))
	t.add("… per idle slot", stat(res.values(vIdleRMQ, mServerPerSlot), num))
	t.add(fmt.Sprintf("lateness of the %d messages sent while idle: p50", idleMessages), stat(res.values(vIdleRMQ, mLateP50), ms))
	t.add("… max", stat(res.values(vIdleRMQ, mLateMax), ms))
	t.add("… earliest", stat(res.values(vIdleRMQ, mLateMin), ms))
	t.write(rep.w)
	perSlot := maxOr(res.values(vIdleRMQ, mIssuedPerSlot))
	rep.target("Idle cost", "≤ 1 command/s per idle slot (sent; worst round)",
		fmt.Sprintf("%s sent, %s executed incl. Lua-internal", num(perSlot), num(maxOr(res.values(vIdleRMQ, mServerPerSlot)))),
		verdict(perSlot, func(x float64) bool { return x <= 1 }))
	late := maxOr(res.values(vIdleRMQ, mLateMax))
	earliest := minOr(res.values(vIdleRMQ, mLateMin))
	rep.target("Idle yet punctual", "every message sent while idle ≤ 10 ms late, never early",
		fmt.Sprintf("max %s, earliest %s", ms(late), ms(earliest)),
		verdict(late, func(x float64) bool { return x <= 10 && earliest >= 0 }))
}
