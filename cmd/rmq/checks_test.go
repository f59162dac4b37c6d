package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A rate too large for an int must not leave its default burst at 1 (the
// conversion overflowed): "rmq limit t 1e19" would then let each pop take
// one message. The burst defaults to the rate; a rate that cannot be one
// caps it (at 2^53, past which the limiter's float64 tokens miscount), or is
// refused.
func TestLimitHugeRateKeepsItsBurst(t *testing.T) {
	for _, arg := range []string{"1e19", "9.3e18", "1e300"} {
		l, err := parseLimit(arg)
		if err != nil {
			assert.ErrorIs(t, err, rmq.ErrInvalidRateLimit, arg)
			continue
		}
		assert.GreaterOrEqual(t, l.Burst, 1<<53, "%s: the default burst is the rate (as far as the limiter counts); got %v", arg, l)
	}
}

// A rate that is not zero but below the smallest float64 must not become
// "unlimited": the operator asked for nearly no deliveries and would get
// all of them.
func TestLimitUnderflowIsNotUnlimited(t *testing.T) {
	for _, arg := range []string{"1e-400", "0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001"} {
		l, err := parseLimit(arg)
		if err == nil {
			assert.NotEqual(t, rmq.RateLimit{}, l, "%s is not zero, yet read as unlimited", arg)
		}
	}
	code, _, stderr := rmqCmd(t, "", "limit", "-redis=127.0.0.1:1", "p", "1e-400")
	assert.Equal(t, exitUsage, code, stderr)
}

// An invalid TOPIC is bad usage (exit 2), like an invalid -namespace, and it
// is refused before anything connects: the address here answers nothing.
func TestInvalidTopicIsUsageErrorBeforeConnecting(t *testing.T) {
	for _, args := range [][]string{
		{"stats", "a{b}"}, {"dead", "a b"}, {"requeue", "a/b", "x"}, {"purge", "-yes", "a{b}"},
		{"pause", "a{b}"}, {"resume", "a{b}"}, {"limit", "a{b}", "5"}, {"delete", "-yes", "-force", "a{b}"},
		{"assignment", "a{b}"},
	} {
		code, _, stderr := rmqCmd(t, "", append(args, "-redis=127.0.0.1:1")...)
		assert.Equal(t, exitUsage, code, "%v: %s", args, stderr)
		assert.Contains(t, stderr, "invalid topic name", args)
		assert.NotContains(t, stderr, "refused", "%v: checked before connecting", args)
	}
}

// With -zk the namespace and the topic are checked as without it: an
// invalid one is bad usage, not "no live workers" with exit 0.
func TestZooKeeperCommandsRefuseInvalidNames(t *testing.T) {
	zk := strings.Join(testenv.ZooKeeper(t), ",")
	code, stdout, stderr := rmqCmd(t, "", "workers", "-zk", zk, "-namespace", "a/b")
	assert.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, `invalid namespace "a/b"`)
	code, stdout, stderr = rmqCmd(t, "", "assignment", "-zk", zk, "-namespace", "a/b", "orders")
	assert.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	code, stdout, stderr = rmqCmd(t, "", "assignment", "-zk", zk, "x/../y")
	assert.Equal(t, exitUsage, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, "invalid topic name")
}

// A ZooKeeper that does not answer fails the command with an error that
// says which: "rmq: context deadline exceeded" names neither ZooKeeper nor
// its address.
func TestZooKeeperUnreachableNamesIt(t *testing.T) {
	silent := testenv.FakeServer(t, func(net.Conn, *bufio.Reader) {}) // accepts, never answers
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var out, errs lockedBuffer
	start := time.Now()
	code := run(ctx, []string{"workers", "-zk", silent}, strings.NewReader(""), &out, &errs)
	assert.Less(t, time.Since(start), 20*time.Second)
	assert.Equal(t, exitError, code, errs.String())
	assert.Regexp(t, `(?i)zookeeper`, errs.String())
	assert.Contains(t, errs.String(), silent, "the error names the ensemble")
}

// Ctrl-C at a confirmation prompt ends the command at once, with a non-zero
// exit and nothing deleted; the prompt must not wait for a line that never
// comes (rmq catches SIGINT, so the process would not end otherwise).
func TestInterruptAtThePromptCancels(t *testing.T) {
	b := testenv.Mini(t)
	ns := testenv.Namespace(t, b)
	ctx := context.Background()
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close(ctx) })
	require.NoError(t, c.DefineTopic(ctx, rmq.Topic{Name: "p", SlotAmount: 2, Type: rmq.Priority}))
	require.NoError(t, c.Producer().Send(ctx, rmq.PriorityMessage{Topic: "p", Content: []byte("x"), Priority: 20}))

	for _, args := range [][]string{{"delete", "-force", "p"}, {"delete", "p"}} {
		stdin, typing := io.Pipe() // a terminal where nobody types
		t.Cleanup(func() { typing.Close() })
		runCtx, interrupt := context.WithCancel(ctx)
		var out, errs lockedBuffer
		code := make(chan int, 1)
		go func() {
			code <- run(runCtx, append(args, addrFlag(b), "-namespace", ns), stdin, &out, &errs)
		}()
		require.Eventually(t, func() bool { return strings.Contains(errs.String(), "[y/N]") },
			10*time.Second, 10*time.Millisecond, "no prompt; stderr:\n%s", errs.String())
		interrupt() // Ctrl-C
		select {
		case c := <-code:
			assert.NotEqual(t, exitOK, c, "%v interrupted at the prompt", args)
		case <-time.After(3 * time.Second):
			t.Errorf("%v: Ctrl-C at the prompt did not end the command", args)
			typing.Close()
			<-code
		}
		st, err := c.Stats(ctx, "p")
		require.NoError(t, err, "the topic is still there")
		assert.Equal(t, int64(1), st.Store, "its message is still there")
	}
}
