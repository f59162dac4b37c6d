package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for concurrent use, with a hook called
// after each write (under the lock).
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	onWrite func(s string)
}

// Write appends p and calls onWrite with everything written so far.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if b.onWrite != nil {
		b.onWrite(b.buf.String())
	}
	return n, err
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// playDemo runs the demo with cfg and returns its output; it fails t if the
// demo fails.
func playDemo(t *testing.T, ctx context.Context, cfg demoConfig, out io.Writer) {
	t.Helper()
	if cfg.deadline == 0 {
		cfg.deadline = 40 * time.Second
	}
	start := time.Now()
	err := runDemo(ctx, newPrinter(out), cfg)
	require.NoError(t, err, "demo failed after %v; output:\n%s", time.Since(start), out)
	t.Logf("demo took %v", time.Since(start))
}

// TestDemo runs the demo on miniredis and checks its output.
func TestDemo(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	playDemo(t, context.Background(), demoConfig{}, &out)
	checkDemoOutput(t, out.String())
}

// TestDemoKeepRunsUntilInterrupted checks that -keep consumes until the
// context ends, then stops cleanly.
func TestDemoKeepRunsUntilInterrupted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := syncBuffer{onWrite: func(s string) {
		if strings.Contains(s, "-keep: still consuming") {
			cancel() // the user presses Ctrl-C
		}
	}}
	playDemo(t, ctx, demoConfig{keep: true}, &out)
	checkDemoOutput(t, out.String())
}

// TestDemoRealRedis runs "rmq demo -redis" on the real standalone Redis.
func TestDemoRealRedis(t *testing.T) {
	t.Parallel()
	b := testenv.Single(t)
	testDemoOn(t, b, []string{os.Getenv("RMQ_REDIS_ADDR")})
}

// TestDemoRealCluster runs "rmq demo -redis" on the real Redis Cluster.
func TestDemoRealCluster(t *testing.T) {
	t.Parallel()
	b := testenv.Cluster(t)
	testDemoOn(t, b, strings.Split(os.Getenv("RMQ_CLUSTER_ADDRS"), ","))
}

// testDemoOn runs the demo on a real server, as "rmq demo -redis addrs" does.
func testDemoOn(t *testing.T, b testenv.Backend, addrs []string) {
	var out syncBuffer
	t.Cleanup(func() {
		if m := regexp.MustCompile(`namespace (demo-[0-9a-f]+)`).FindStringSubmatch(out.String()); m != nil {
			testenv.DeleteNamespace(b.Redis, m[1]) // what a failed demo leaves
		}
	})
	playDemo(t, context.Background(), demoConfig{addrs: addrs}, &out)
	s := out.String()
	checkDemoOutput(t, s)
	assert.Contains(t, s, "cleanup: purged 1 dead message of namespace demo-")
	// The demo deletes its topics: nothing of them stays in a fresh namespace.
	m := regexp.MustCompile(`namespace (demo-[0-9a-f]+)`).FindStringSubmatch(s)
	require.NotNil(t, m, s)
	c, err := rmq.New(b.Redis, rmq.WithNamespace(m[1]))
	require.NoError(t, err)
	defer c.Close(context.Background())
	topics, err := c.Topics(context.Background())
	require.NoError(t, err)
	assert.Empty(t, topics, "the demo's topics stay in Redis")
}

// TestDemoFailsPastDeadline checks that a scenario past its deadline exits 1.
func TestDemoFailsPastDeadline(t *testing.T) {
	t.Parallel()
	var stdout, stderr syncBuffer
	code := run(context.Background(), []string{"demo", "-deadline", "300ms"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr.String(), "did not complete within 300ms")
}

// checkDemoOutput checks that the demo output shows each feature.
func checkDemoOutput(t *testing.T, out string) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("output:\n%s", out)
		}
	}()

	// Merging: five sends, one delivery.
	assert.Equal(t, 1, count(out, `(?m)^\s*\+\S+\s+ok\s+demo\.render\s+"sku:42"`), "deliveries of sku:42")
	assert.Equal(t, mergeSends, count(out, `(?m)^\s*\+\S+\s+send\s+demo\.render\s+"sku:42" price change`), "sends of sku:42")
	wantLine(t, out, `merge\s+"sku:42" sent 5 times, delivered 1 time$`)

	// Priorities: consumed highest first, though sent lowest first.
	assert.Equal(t, []float64{900, 500, 100}, numbers(out, `(?m)^\s*\+\S+\s+ok\s+demo\.jobs\s+"[^"]+" priority (\d+)$`),
		"priorities in the order consumed")
	wantLine(t, out, `priority\s+sent 100, 500, 900 while the consumer was busy; consumed 900, 500, 100$`)

	// Fixed time: delivered, and not before its due time.
	late := numbers(out, `(?m)ok\s+demo\.reminders\s+"order:1001:close-if-unpaid" due \S+, delivered (-?\d+\.\d) ms late$`)
	if assert.Len(t, late, 1, "deliveries of the reminder") {
		assert.GreaterOrEqual(t, late[0], 0.0, "ms late: negative means before its due time")
	}

	// Retries and the dead set.
	wantLine(t, out, `ok\s+demo\.render\s+"sku:13" rendered on attempt 3$`)
	for a := 1; a <= 17; a++ {
		wantLine(t, out, `fail\s+demo\.render\s+"sku:666" attempt `+strconv.Itoa(a)+`, RetriesLeft `+strconv.Itoa(17-a)+`: `)
	}
	assert.Equal(t, 17, count(out, `fail\s+demo\.render\s+"sku:666"`), "failures of sku:666")
	wantLine(t, out, `dead\s+demo\.render\s+"sku:666" is in the dead set after 17 deliveries$`)
	wantLine(t, out, `demo\.render\s+\d+\s+\S+ \S+\s+"sku:666"$`)      // the dead messages table
	wantLine(t, out, `demo\.render\s+RangeMerge\s+4\s+0\s+0\s+0\s+1$`) // the stats table

	wantLine(t, out, `scenario complete$`)
}

// wantLine fails t unless a line of out matches pattern.
func wantLine(t *testing.T, out, pattern string) {
	t.Helper()
	assert.NotZero(t, count(out, "(?m)"+pattern), "no line matches %q", pattern)
}

// count returns how many times pattern matches out.
func count(out, pattern string) int {
	return len(regexp.MustCompile(pattern).FindAllStringIndex(out, -1))
}

// numbers returns the first submatch of every match of pattern, as numbers.
func numbers(out, pattern string) []float64 {
	var ns []float64
	for _, m := range regexp.MustCompile(pattern).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.ParseFloat(m[1], 64)
		ns = append(ns, n)
	}
	return ns
}
