package main

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// "rmq assignment -zk … TOPIC" refuses a topic ZooKeeper has no record of
// (a typo) with exit 1 and "unknown topic", as it does without -zk. (It
// printed "no assignment … (no worker subscribed yet)" and exited 0.)
func TestAssignmentWithZooKeeperRefusesAnUnknownTopic(t *testing.T) {
	servers := testenv.ZooKeeper(t)
	b := testenv.Single(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	defer c.Close(ctx)
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "orders", SlotAmount: 4, Type: rmq.FixedTime}))

	redisFlag := "-redis=" + os.Getenv("RMQ_REDIS_ADDR")
	code, _, stderr := rmqCmd(t, "", "assignment", redisFlag, "-namespace", ns, "ordres")
	require.Equal(t, exitError, code, "the Redis path refuses the unknown topic")
	require.Contains(t, stderr, "unknown topic")

	code, out, stderr := rmqCmd(t, "", "assignment", redisFlag, "-namespace", ns, "-zk", strings.Join(servers, ","), "ordres")
	t.Logf("with -zk: exit %d, stdout %q, stderr %q", code, out, stderr)
	assert.Equal(t, exitError, code, "an unknown topic is an error with -zk too")
	assert.Contains(t, stderr, "unknown topic")
}
