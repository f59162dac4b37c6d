package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rmqCmd runs rmq with args and stdin, and returns its exit code and output.
func rmqCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// mustRun runs rmq with args and fails t unless it exits 0; it returns stdout.
func mustRun(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	code, out, errs := rmqCmd(t, stdin, args...)
	require.Equal(t, exitOK, code, "rmq %s\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), out, errs)
	return out
}

// addrFlag returns the -redis flag that points rmq at b.
func addrFlag(b testenv.Backend) string {
	switch {
	case b.Mini != nil:
		return "-redis=" + b.Mini.Addr()
	case isCluster(b.Redis):
		return "-redis=" + os.Getenv("RMQ_CLUSTER_ADDRS")
	default:
		return "-redis=" + os.Getenv("RMQ_REDIS_ADDR")
	}
}

// isCluster reports whether r is a Redis Cluster client.
func isCluster(r redis.UniversalClient) bool {
	_, ok := r.(*redis.ClusterClient)
	return ok
}

// Seeded data of the admin tests.
var (
	pendingOrders = []string{"order-a", "order-b", "order-c"} // in "orders", never consumed
	deadRenders   = [][]byte{[]byte("poison-1"), []byte("poison-2"), {0xff, 0x00, 0x01}}
)

// seed defines topics in namespace ns of b and fills them: three pending
// orders, a pending reminder, three dead renders and one dead job.
func seed(t *testing.T, b testenv.Backend, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := rmq.New(b.Redis, rmq.WithNamespace(ns), rmq.WithRetryBackoff(rmq.NoBackoff))
	require.NoError(t, err)
	for _, tp := range []rmq.Topic{
		{Name: "orders", SlotAmount: 8, Type: rmq.Priority},
		{Name: "renders", SlotAmount: 4, Type: rmq.RangeMerge},
		{Name: "reminders", SlotAmount: 2, Type: rmq.FixedTime},
		{Name: "jobs", SlotAmount: 1, Type: rmq.Priority},
	} {
		require.NoError(t, c.DefineTopic(ctx, tp))
	}
	msgs := []rmq.OutgoingMessage{
		rmq.FixedTimeMessage{Topic: "reminders", Content: []byte("later"), FixedTime: time.Now().Add(time.Hour)},
		rmq.PriorityMessage{Topic: "jobs", Content: []byte("bad job"), Priority: 100},
	}
	for _, o := range pendingOrders {
		msgs = append(msgs, rmq.PriorityMessage{Topic: "orders", Content: []byte(o), Priority: 20})
	}
	for _, r := range deadRenders {
		msgs = append(msgs, rmq.RangeMergeMessage{Topic: "renders", Content: r, TimeRange: time.Millisecond})
	}
	require.NoError(t, c.Producer().SendBatch(ctx, msgs...))

	// Consume renders and jobs with a listener that always fails, until all are dead.
	fail := rmq.ListenerFunc(func(context.Context, *rmq.Message) error { return context.Canceled })
	for _, topic := range []string{"renders", "jobs"} {
		require.NoError(t, c.Subscribe(topic, fail, rmq.WithBreaker(rmq.Breaker{}))) // every call fails on purpose
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	require.Eventually(t, func() bool {
		var dead int64
		for _, topic := range []string{"renders", "jobs"} {
			st, err := c.Stats(ctx, topic)
			if !assert.NoError(t, err) {
				return false
			}
			dead += st.Dead
		}
		return dead == int64(len(deadRenders)+1)
	}, 20*time.Second, 20*time.Millisecond, "seeding: the failing messages did not all die")
	require.NoError(t, c.Close(ctx))
	require.NoError(t, <-done)
}

// TestAdmin runs every admin subcommand on seeded data, on miniredis and on
// the real Redis and Cluster when they are configured.
func TestAdmin(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		ns := testenv.Namespace(t, b)
		seed(t, b, ns)
		flags := []string{addrFlag(b), "-namespace", ns}
		if isCluster(b.Redis) {
			// one address with -cluster works as well as the list
			flags = []string{"-redis", strings.Split(os.Getenv("RMQ_CLUSTER_ADDRS"), ",")[0], "-cluster", "-namespace", ns}
		}
		cmdline := func(sub string, args ...string) []string {
			return append(append([]string{sub}, flags...), args...)
		}
		admin := func(t *testing.T, stdin, sub string, args ...string) string {
			t.Helper()
			return mustRun(t, stdin, cmdline(sub, args...)...)
		}

		t.Run("topics", func(t *testing.T) {
			out := admin(t, "", "topics")
			wantLine(t, out, `^NAME\s+TYPE\s+SLOTS$`)
			wantLine(t, out, `^jobs\s+Priority\s+1$`)
			wantLine(t, out, `^orders\s+Priority\s+8$`)
			wantLine(t, out, `^reminders\s+FixedTime\s+2$`)
			wantLine(t, out, `^renders\s+RangeMerge\s+4$`)
		})
		t.Run("topics of an empty namespace", func(t *testing.T) {
			out := mustRun(t, "", "topics", addrFlag(b), "-namespace", ns+"-empty")
			wantLine(t, out, `^no topics in namespace "`+regexp.QuoteMeta(ns)+`-empty"$`)
		})

		t.Run("stats", func(t *testing.T) {
			out := admin(t, "", "stats", "orders")
			wantLine(t, out, `^topic orders \(namespace `+regexp.QuoteMeta(ns)+`, 8 slots\)$`)
			wantLine(t, out, `^store\s+3\s`)
			wantLine(t, out, `^prepare\s+0\s`)
			wantLine(t, out, `^dead\s+0\s`)
			want := map[string]int{}
			for _, o := range pendingOrders {
				want[itoa(int64(rmq.SlotIndex([]byte(o), 8)))]++
			}
			rows := map[string]string{} // slot → "store retry prepare dead"
			for slot, n := range want {
				rows[slot] = itoa(int64(n)) + " 0 0 0"
			}
			assert.Equal(t, rows, slotRows(out), "the non-empty slots")
			assert.Len(t, slotRows(admin(t, "", "stats", "orders", "-all")), 8, "-all lists every slot")
			out = admin(t, "", "stats", "renders")
			wantLine(t, out, `^store\s+0\s`)
			wantLine(t, out, `^dead\s+3\s`)
		})

		t.Run("dead", func(t *testing.T) {
			out := admin(t, "", "dead", "renders")
			wantLine(t, out, `^TOPIC\s+SLOT\s+DIED\s+CONTENT$`)
			wantLine(t, out, `^renders\s+\d\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\s+"poison-1"$`)
			wantLine(t, out, `^renders\s+\d\s+.*\s"poison-2"$`)
			wantLine(t, out, `^renders\s+\d\s+.*\shex:ff0001$`)
			assert.Equal(t, 3, count(out, `(?m)^renders\s`), "dead messages listed")
			out = admin(t, "", "dead", "renders", "-limit", "2")
			assert.Equal(t, 2, count(out, `(?m)^renders\s`), "dead messages listed with -limit 2")
			wantLine(t, out, `^\(stopped at -limit 2; -limit 0 lists all\)$`)
			wantLine(t, admin(t, "", "dead", "orders"), `^no dead messages$`)
		})

		t.Run("requeue and purge", func(t *testing.T) {
			wantLine(t, admin(t, "", "requeue", "renders", "poison-1"), `^requeued 1 dead message of topic renders$`)
			out := admin(t, "", "stats", "renders")
			wantLine(t, out, `^store\s+1\s`)
			wantLine(t, out, `^dead\s+2\s`)
			// A binary content, as "rmq dead" printed it.
			wantLine(t, admin(t, "", "requeue", "-printed", "renders", "hex:ff0001"), `^requeued 1 dead message of topic renders$`)
			wantLine(t, admin(t, "", "dead", "renders"), `^renders\s+\d\s+.*\s"poison-2"$`)
			wantLine(t, admin(t, "", "stats", "renders"), `^dead\s+1\s`)

			code, _, stderr := rmqCmd(t, "n\n", cmdline("purge", "renders")...)
			assert.Equal(t, exitError, code, "purge answered no")
			assert.Contains(t, stderr, "Delete 1 dead message of topic renders in namespace "+ns+"? [y/N] ")
			assert.Contains(t, stderr, "rmq: purge cancelled; nothing deleted")
			wantLine(t, admin(t, "", "stats", "renders"), `^dead\s+1\s`)
			wantLine(t, admin(t, "y\n", "purge", "renders"), `^purged 1 dead message of topic renders$`)
			wantLine(t, admin(t, "", "purge", "renders"), `^no dead messages in topic renders$`)

			wantLine(t, admin(t, "", "purge", "jobs", "-yes"), `^purged 1 dead message of topic jobs$`)
			wantLine(t, admin(t, "", "requeue", "jobs"), `^requeued 0 dead messages of topic jobs$`)
		})

		t.Run("unknown topic", func(t *testing.T) {
			for _, sub := range []string{"stats", "dead", "requeue", "purge"} {
				code, _, stderr := rmqCmd(t, "", cmdline(sub, "nope")...)
				assert.Equal(t, exitError, code, sub)
				assert.Regexp(t, `^rmq: unknown topic "nope" in namespace`, stderr, sub)
			}
		})
	})
}

// slotRows returns the rows of the slot table in out: slot → "store retry prepare dead".
func slotRows(out string) map[string]string {
	rows := map[string]string{}
	in := false
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == "SLOT":
			in = true
		case in && len(f) == 5:
			rows[f[0]] = strings.Join(f[1:], " ")
		}
	}
	return rows
}

// TestUsage checks help, bad usage (exit 2) and errors (exit 1).
func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string // a pattern the output must match
		stderr string
	}{
		{"no subcommand", nil, exitUsage, ``, `(?m)^Usage:`},
		{"unknown subcommand", []string{"frobnicate"}, exitUsage, ``, `rmq: unknown subcommand "frobnicate"`},
		{"help", []string{"help"}, exitOK, `(?m)^  rmq requeue \[flags\] TOPIC \[CONTENT…\]\s+move dead`, ``},
		{"help of a subcommand", []string{"help", "stats"}, exitOK, `-all`, ``},
		{"help of an unknown subcommand", []string{"help", "nope"}, exitUsage, ``, `unknown subcommand "nope"`},
		{"-h", []string{"dead", "-h"}, exitOK, ``, `(?s)usage: rmq dead \[flags\] TOPIC.*-limit N`},
		{"missing TOPIC", []string{"stats"}, exitUsage, ``, `rmq stats: missing TOPIC`},
		{"missing TOPIC of purge", []string{"purge", "-yes"}, exitUsage, ``, `rmq purge: missing TOPIC`},
		{"extra argument", []string{"dead", "a", "b"}, exitUsage, ``, `unexpected argument "b" after TOPIC`},
		{"extra argument of topics", []string{"topics", "a"}, exitUsage, ``, `unexpected argument "a"`},
		{"unknown flag", []string{"topics", "-bogus"}, exitUsage, ``, `flag provided but not defined: -bogus`},
		{"bad flag value", []string{"dead", "-limit", "x", "t"}, exitUsage, ``, `invalid value "x" for flag -limit`},
		{"negative limit", []string{"dead", "-limit", "-1", "t"}, exitUsage, ``, `-limit -1 is negative`},
		{"demo takes no arguments", []string{"demo", "now"}, exitUsage, ``, `unexpected argument "now"`},
		{"no address", []string{"topics", "-redis", ""}, exitUsage, ``, `-redis needs at least one address`},
		{"bad namespace", []string{"topics", "-redis", "127.0.0.1:1", "-namespace", "a{b}"}, exitUsage, ``, `rmq topics: invalid namespace "a{b}"`},
		{"redis down", []string{"stats", "-redis", "127.0.0.1:1", "t"}, exitError, ``, `^rmq: redis 127.0.0.1:1: .*refused`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := rmqCmd(t, "", tc.args...)
			assert.Equal(t, tc.code, code, "exit code; stderr:\n%s", stderr)
			if tc.stdout != "" {
				assert.Regexp(t, tc.stdout, stdout)
			}
			if tc.stderr != "" {
				assert.Regexp(t, tc.stderr, stderr)
			}
		})
	}
}
