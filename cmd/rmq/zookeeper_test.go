package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/coordinator/zookeeper"
	"github.com/rmq-go/rmq/internal/testenv"
)

func TestWorkersAndAssignment(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	zk := strings.Join(servers, ",")
	z, err := zookeeper.New(zookeeper.Config{
		Servers: servers, SessionTimeout: 4 * time.Second, Root: "/rmq-cli", WorkerID: "cli-worker"})
	require.NoError(t, err)
	t.Cleanup(func() { z.Close() }) // after the client's Close, registered below
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithCoordinator(z))
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "orders", SlotAmount: 4, Type: rmq.FixedTime}))
	require.NoError(t, c.Subscribe("orders", rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return nil }), rmq.WithThreads(2)))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		require.NoError(t, c.Close(ctx))
		require.NoError(t, <-done)
	})
	flags := []string{"-zk", zk, "-zk-root", "/rmq-cli", "-namespace", ns}

	deadline := time.Now().Add(10 * time.Second)
	var out string
	for {
		out = mustRun(t, "", append([]string{"assignment"}, append(flags, "orders")...)...)
		if strings.Contains(out, "0 not yet with their assigned thread") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Contains(t, out, "0 not yet with their assigned thread", out)
	for slot := range 4 {
		assert.Contains(t, out, fmt.Sprintf("cli-worker#%d", slot%2), out)
	}
	assert.Equal(t, 4, strings.Count(out, " held"), out)

	out = mustRun(t, "", append([]string{"workers"}, flags...)...)
	assert.Contains(t, out, "cli-worker")
	assert.Contains(t, out, "orders(2)")
	assert.Contains(t, out, "leader")

	code, _, stderr := rmqCmd(t, "", append([]string{"assignment"}, flags...)...)
	assert.Equal(t, exitUsage, code, stderr)
}

func TestWorkersAndAssignmentOfTheRedisCoordinator(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "orders", SlotAmount: 4, Type: rmq.FixedTime}))
	require.NoError(t, c.Subscribe("orders", rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return nil }), rmq.WithThreads(2)))
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		require.NoError(t, c.Close(ctx))
		require.NoError(t, <-done)
	})
	flags := []string{"-redis", os.Getenv("RMQ_REDIS_ADDR"), "-namespace", ns}

	deadline := time.Now().Add(10 * time.Second)
	var out string
	for {
		out = mustRun(t, "", append([]string{"assignment"}, append(flags, "orders")...)...)
		if strings.Contains(out, "0 not yet with their assigned worker") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Contains(t, out, "(coordinator redis), 4 slots, 0 not yet with their assigned worker", out)
	assert.Equal(t, 4, strings.Count(out, " held"), out)

	out = mustRun(t, "", append([]string{"workers"}, flags...)...)
	assert.Contains(t, out, "coordinator redis, 1 workers", out)
	assert.Contains(t, out, "orders(2)", out)
	assert.Contains(t, out, "orders(4)", out, "owned slots")
	assert.Contains(t, out, "leader", out)
}
