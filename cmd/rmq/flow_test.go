package main

import (
	"context"
	"flag"
	"io"
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
	assert.Contains(t, stderr, "burst 0 is below 1")
	code, _, stderr = rmqCmd(t, "", cmd("limit", "p", "-3")...)
	assert.Equal(t, exitUsage, code, stderr)
	assert.Contains(t, stderr, "invalid rate limit: rate -3 per second")
	assert.Contains(t, mustRun(t, "", cmd("stats", "p")...), "consuming; rate limit unlimited", "a refused limit changes nothing")
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

// Bad limits are refused as usage errors carrying ErrInvalidRateLimit's
// message before rmq connects to Redis: the address here answers nothing.
func TestLimitRefusesBadLimitsBeforeConnecting(t *testing.T) {
	cases := []struct {
		name, arg, want string
	}{
		{"negative rate", "-5", "invalid rate limit: rate -5 per second"},
		{"negative rate with a burst", "-5/2", "invalid rate limit: rate -5 per second"},
		{"negative fraction", "-.5", "invalid rate limit: rate -0.5 per second"},
		{"zero burst with a rate", "5/0", "invalid rate limit: burst 0 is below 1"},
		{"burst without a rate", "0/3", "invalid rate limit: a burst of 3 without a rate"},
		{"not a number", "fast", `rate "fast" is not a number`},
		{"burst not a whole number", "5/x", `burst "x" is not a whole number`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := rmqCmd(t, "", "limit", "-redis=127.0.0.1:1", "p", c.arg)
			assert.Equal(t, exitUsage, code, stderr)
			assert.Contains(t, stderr, "rmq limit: "+c.want)
			assert.NotContains(t, stderr, "flag provided but not defined")
			assert.NotContains(t, stderr, "127.0.0.1:1", "refused before connecting")
		})
	}
}

func TestParseLimit(t *testing.T) {
	cases := []struct {
		arg  string
		want rmq.RateLimit
		bad  bool
	}{
		{arg: "off", want: rmq.RateLimit{}},
		{arg: "0", want: rmq.RateLimit{}},
		{arg: "0.0", want: rmq.RateLimit{}},
		{arg: "500", want: rmq.RateLimit{PerSecond: 500, Burst: 500}},
		{arg: "0.5", want: rmq.RateLimit{PerSecond: 0.5, Burst: 1}},
		{arg: "500/50", want: rmq.RateLimit{PerSecond: 500, Burst: 50}},
		{arg: "-1", bad: true},
		{arg: "10/0", bad: true},
		{arg: "10/-2", bad: true},
		{arg: "NaN", bad: true},
		{arg: "Inf", bad: true},
	}
	for _, c := range cases {
		got, err := parseLimit(c.arg)
		if c.bad {
			assert.ErrorIs(t, err, rmq.ErrInvalidRateLimit, c.arg)
			continue
		}
		require.NoError(t, err, c.arg)
		assert.Equal(t, c.want, got, c.arg)
	}
}

// A negative number among the arguments is positional, not a flag; flags
// still parse anywhere.
func TestParseArgsTakesNegativeNumbersAsArguments(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 0, "")
	pos, err := parseArgs(fs, []string{"topic", "-5", "-n", "-3", "-.5/2"})
	require.NoError(t, err)
	assert.Equal(t, []string{"topic", "-5", "-.5/2"}, pos)
	assert.Equal(t, -3, *n)
	_, err = parseArgs(fs, []string{"topic", "-x"})
	assert.ErrorIs(t, err, errUsageShown, "an unknown flag is still refused")
}
