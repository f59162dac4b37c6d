package main

import (
	"context"
	"testing"
	"time"

	"github.com/rmq-go/rmq"
)

// The idle scenario subtracts the producer's commands, as its hook counts
// them, from what Redis executed: the hook must see every command the
// producer's Sends cost (with the send stream, which passes no hook, it saw
// none of the 20 of 10 Sends, and the figure kept them).
func TestIdleProducerHookSeesItsSends(t *testing.T) {
	addr := startRedis(t)
	ctx := context.Background()
	e := &env{config: &config{addr: addr}, admin: newRedis(addr)}
	defer e.admin.Close()
	var workerCmds, producerCmds countHook
	w, err := openRMQ(e, &workerCmds)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	p, err := openIdleProducer(e, &producerCmds)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	const topic = "idle"
	if err := w.define(ctx, topic, idleSlots, rmq.FixedTime); err != nil {
		t.Fatal(err)
	}
	send := func(prefix string, i int) {
		msg := rmq.FixedTimeMessage{Topic: topic, Content: payload(prefix, i), FixedTime: time.Now().Add(time.Hour)}
		if err := p.c.Producer().Send(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	send("w", 0) // the topic's lookup, outside the count

	before, err := commandStats(ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	hooked := producerCmds.n.Load()
	for i := range 10 {
		send("i", i)
	}
	after, err := commandStats(ctx, e.admin)
	if err != nil {
		t.Fatal(err)
	}
	hooked = producerCmds.n.Load() - hooked
	var server int64
	for name, st := range statsDelta(before, after) {
		if name != "info" {
			server += st.Calls
		}
	}
	if server == 0 || hooked != server {
		t.Errorf("10 Sends cost Redis %d commands; the producer's hook, which the scenario subtracts, counted %d",
			server, hooked)
	}
}
