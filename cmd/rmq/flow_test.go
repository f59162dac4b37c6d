package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

func TestFlowControlCommands(t *testing.T) {
	b := testenv.Mini(t)
	ns := testenv.Namespace(t, b)
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	ctx := context.Background()
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "p", SlotAmount: 4, Type: rmq.Priority}))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("x"), Priority: 20}))
	flags := []string{addrFlag(b), "-namespace", ns}
	cmd := func(name string, args ...string) []string { return append(append([]string{name}, flags...), args...) }

	assert.Contains(t, mustRun(t, "", cmd("pause", "p")...), "paused topic p")
	assert.Contains(t, mustRun(t, "", cmd("stats", "p")...), "PAUSED; rate limit unlimited")
	assert.Contains(t, mustRun(t, "", cmd("limit", "p", "500/50")...), "rate limit 500/s, burst 50")
	out := mustRun(t, "", cmd("stats", "p")...)
	assert.Contains(t, out, "PAUSED; rate limit 500/s, burst 50", out)
	mustRun(t, "", cmd("resume", "p")...)
	mustRun(t, "", cmd("limit", "p", "off")...)
	assert.Contains(t, mustRun(t, "", cmd("stats", "p")...), "consuming; rate limit unlimited")

	code, _, stderr := rmqCmd(t, "", cmd("limit", "p", "5/0")...)
	assert.Equal(t, exitUsage, code, stderr)
	code, _, stderr = rmqCmd(t, "", cmd("limit", "p", "-3")...)
	assert.Equal(t, exitUsage, code, stderr)
	code, _, stderr = rmqCmd(t, "", cmd("pause", "nope")...)
	assert.Equal(t, exitError, code, stderr)

	code, _, stderr = rmqCmd(t, "", cmd("delete", "-yes", "p")...)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "use -force")
	code, _, _ = rmqCmd(t, "n\n", cmd("delete", "-force", "p")...)
	assert.Equal(t, exitError, code, "not confirmed")
	out = mustRun(t, "y\n", cmd("delete", "-force", "p")...)
	assert.True(t, strings.Contains(out, "deleted topic p"), out)
	code, _, _ = rmqCmd(t, "", cmd("stats", "p")...)
	assert.Equal(t, exitError, code, "the topic is gone")
}
