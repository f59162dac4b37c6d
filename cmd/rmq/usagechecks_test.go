package main

import (
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// "rmq requeue TOPIC CONTENT…" with an empty CONTENT (an unset shell
// variable) is a usage error and requeues nothing: no message has an empty
// content. (It exited 0, "requeued 0".)
func TestRequeueRefusesAnEmptyContent(t *testing.T) {
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "orders", SlotAmount: 2, Type: rmq.Priority}))
	redisFlag := "-redis=" + os.Getenv("RMQ_REDIS_ADDR")
	for _, args := range [][]string{{"orders", ""}, {"-printed", "orders", `""`}, {"orders", "a", ""}} {
		code, _, stderr := rmqCmd(t, "", append([]string{"requeue", redisFlag, "-namespace", ns}, args...)...)
		assert.Equal(t, exitUsage, code, "requeue %q: %s", args, stderr)
		assert.Contains(t, stderr, "empty", "requeue %q", args)
	}
}

// -zk-root, -zk-user and -zk-password without -zk are usage errors: they
// would be ignored and the Redis coordinator read instead.
func TestZooKeeperFlagsNeedZK(t *testing.T) {
	for _, args := range [][]string{
		{"workers", "-zk-root", "/other"},
		{"assignment", "-zk-user", "u", "-zk-password", "p", "orders"},
	} {
		code, _, stderr := rmqCmd(t, "", append(args, "-redis=127.0.0.1:1")...)
		assert.Equal(t, exitUsage, code, "%q: %s", args, stderr)
		assert.Contains(t, stderr, "needs -zk", "%q", args)
	}
}
