package rdb

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/backoff"
)

// fakeStrategy records its writes and completes every request before write
// returns, with outcome's verdict; a write waits for gate first while gate
// is set.
type fakeStrategy struct {
	isDuplex bool
	policy   retryPolicy
	outcome  func(member string, attempt int) error // nil: every entry stored
	refill   func()                                 // called inside each write, if set

	mu        sync.Mutex
	gate      chan struct{}
	writes    [][]string // members per write
	attempts  map[string]int
	active    int
	maxActive int
	closes    atomic.Int64
}

func (f *fakeStrategy) write(batch []*request) {
	f.mu.Lock()
	var members []string
	for _, r := range batch {
		members = append(members, string(r.entry.Member))
	}
	f.writes = append(f.writes, members)
	f.active++
	f.maxActive = max(f.maxActive, f.active)
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if f.refill != nil {
		f.refill()
	}
	for _, r := range batch {
		m := string(r.entry.Member)
		f.mu.Lock()
		if f.attempts == nil {
			f.attempts = map[string]int{}
		}
		attempt := f.attempts[m]
		f.attempts[m]++
		f.mu.Unlock()
		var err error
		if f.outcome != nil {
			err = f.outcome(m, attempt)
		}
		r.Complete(err)
	}
	f.mu.Lock()
	f.active--
	f.mu.Unlock()
}

func (f *fakeStrategy) duplex() bool   { return f.isDuplex }
func (f *fakeStrategy) inFlight() bool { return false }
func (f *fakeStrategy) retryAfter(err error, attempt int) (time.Duration, bool) {
	return f.policy.after(err, attempt)
}
func (f *fakeStrategy) close(context.Context) { f.closes.Add(1) }

// snapshot returns the writes so far and the most that ran at once.
func (f *fakeStrategy) snapshot() ([][]string, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]string(nil), f.writes...), f.maxActive
}

// queued returns how many requests wait for a writer.
func (s *sender) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

func entry(m string) Entry { return Entry{Key: "k", Member: []byte(m)} }

// sendAll sends n entries named prefix-i from n goroutines and returns their errors.
func sendAll(s *sender, prefix string, n int) func() []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { errs[i] = s.send(context.Background(), entry(fmt.Sprintf("%s-%d", prefix, i))) })
	}
	return func() []error { wg.Wait(); return errs }
}

// With a duplex strategy a lone Send writes at once; Sends that arrive while
// a write is under way queue and go out together in the next write, by the
// same writer, never two writes at once.
func TestSenderDuplexOneWriterCoalesces(t *testing.T) {
	f := &fakeStrategy{isDuplex: true, gate: make(chan struct{})}
	counts := new(SendCounts)
	s := newSender(f, counts)

	first := sendAll(s, "first", 1)
	require.Eventually(t, func() bool { w, _ := f.snapshot(); return len(w) == 1 }, 5*time.Second, time.Millisecond)
	const n = 50
	rest := sendAll(s, "rest", n)
	require.Eventually(t, func() bool { return s.queued() == n }, 5*time.Second, time.Millisecond)
	close(f.gate)
	for _, err := range append(first(), rest()...) {
		require.NoError(t, err)
	}

	writes, most := f.snapshot()
	require.Len(t, writes, 2, "the queued Sends share one write")
	assert.Equal(t, []string{"first-0"}, writes[0])
	assert.Len(t, writes[1], n)
	assert.Equal(t, 1, most, "one writer at a time")
	assert.Equal(t, int64(n+1), counts.Sent.Load())
	assert.Equal(t, int64(2), counts.Writes.Load())
	assert.Zero(t, s.working, "the writer role is given up once the queue is empty")
}

// An elected writer makes at most maxWriterRounds writes while the queue
// keeps filling, then keeps the role for the goroutine it hands over to.
func TestSenderWriterHandsOverAfterItsRounds(t *testing.T) {
	var s *sender
	refills := 0
	f := &fakeStrategy{isDuplex: true}
	f.refill = func() {
		if refills < 10 {
			refills++
			s.mu.Lock()
			r := requestPool.Get().(*request)
			r.entry, r.counts = entry(fmt.Sprint("more-", refills)), s.counts
			s.pending = append(s.pending, r)
			s.mu.Unlock()
		}
	}
	s = newSender(f, new(SendCounts))
	s.pending = append(s.pending, &request{entry: entry("first"), done: make(chan struct{}, 1), counts: s.counts})
	s.working = 1 // elected

	assert.False(t, s.writeQueued(maxWriterRounds), "the queue is not empty")
	writes, _ := f.snapshot()
	assert.Len(t, writes, maxWriterRounds)
	assert.Equal(t, 1, s.working, "the role stays taken")
	assert.True(t, s.writeQueued(-1))
	writes, _ = f.snapshot()
	assert.Len(t, writes, 11, "one write per refill, and the first")
	assert.Zero(t, s.working)
	assert.Empty(t, s.pending)
}

// With pipelines, at most maxPipelines writes run at once, each of at most
// maxPipeline requests, and every Send is stored.
func TestSenderPipelinesTwoWritersBoundedBatches(t *testing.T) {
	f := &fakeStrategy{gate: make(chan struct{})}
	counts := new(SendCounts)
	s := newSender(f, counts)

	var firsts []func() []error
	for i := range maxPipelines { // each stuck in a write of its own
		firsts = append(firsts, sendAll(s, fmt.Sprint("first", i), 1))
		require.Eventually(t, func() bool { w, _ := f.snapshot(); return len(w) == i+1 }, 5*time.Second, time.Millisecond)
	}
	const n = 2*maxPipeline + 100
	rest := sendAll(s, "rest", n)
	require.Eventually(t, func() bool { return s.queued() == n }, 5*time.Second, time.Millisecond)
	close(f.gate)
	for _, first := range firsts {
		require.NoError(t, first()[0])
	}
	for _, err := range rest() {
		require.NoError(t, err)
	}

	writes, most := f.snapshot()
	assert.Equal(t, maxPipelines, most)
	total := 0
	for _, w := range writes {
		assert.LessOrEqual(t, len(w), maxPipeline)
		total += len(w)
	}
	assert.Equal(t, n+maxPipelines, total)
	assert.Equal(t, int64(total), counts.Sent.Load())
	require.Eventually(t, func() bool { return !s.writing() }, 5*time.Second, time.Millisecond, "writers end with the queue")
}

// A retryable failure sends the entry again, as often as the policy allows;
// a final one is returned at once.
func TestSenderRetries(t *testing.T) {
	eof := func(string, int) error { return io.EOF }
	for _, c := range []struct {
		name    string
		max     int
		outcome func(m string, attempt int) error
		err     error
		writes  int
	}{
		{"recovers", 3, func(_ string, attempt int) error {
			if attempt < 2 {
				return io.EOF
			}
			return nil
		}, nil, 3},
		{"gives up", 3, eof, io.EOF, 4},
		{"final reply", 3, func(string, int) error { return ReplyError("WRONGTYPE x") }, ReplyError("WRONGTYPE x"), 1},
		{"no policy", 0, eof, io.EOF, 1},
		// Writes that found the connection broken spend no retry, up to
		// maxDeadWrites of them; then they count like any failure.
		{"dead writes are free", 3, func(_ string, attempt int) error {
			if attempt < maxDeadWrites {
				return brokenPipe
			}
			return nil
		}, nil, maxDeadWrites + 1},
		{"dead writes then a retry each", 3, func(_ string, attempt int) error {
			if attempt < maxDeadWrites+3 {
				return brokenPipe
			}
			return nil
		}, nil, maxDeadWrites + 4},
		{"dead writes give up", 3, func(string, int) error { return brokenPipe }, brokenPipe, maxDeadWrites + 4},
		{"dead writes without a policy", 0, func(string, int) error { return brokenPipe }, brokenPipe, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeStrategy{isDuplex: true, policy: retryPolicy{max: c.max}, outcome: c.outcome}
			counts := new(SendCounts)
			s := newSender(f, counts)
			err := s.send(context.Background(), entry("m"))
			assert.Equal(t, c.err, err)
			writes, _ := f.snapshot()
			assert.Len(t, writes, c.writes)
			assert.Equal(t, int64(c.writes-1), counts.Retries.Load())
			if c.err == nil {
				assert.Equal(t, int64(1), counts.Sent.Load())
			}
		})
	}
}

// brokenPipe is how a write onto a connection the server closed fails.
var brokenPipe = fmt.Errorf("rdb: write to redis: %w", &net.OpError{Op: "write", Net: "tcp",
	Err: os.NewSyscallError("write", syscall.EPIPE)})

// Only a write that found the connection reset or closed is a dead write.
func TestDeadWrite(t *testing.T) {
	assert.True(t, deadWrite(brokenPipe))
	assert.True(t, deadWrite(&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}))
	assert.False(t, deadWrite(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}))
	assert.False(t, deadWrite(&net.OpError{Op: "write", Net: "tcp", Err: os.ErrDeadlineExceeded}))
	assert.False(t, deadWrite(io.EOF))
}

// A Send whose ctx ends first returns ctx.Err() as it is.
func TestSenderReturnsWhenCtxEnds(t *testing.T) {
	f := &fakeStrategy{gate: make(chan struct{})}
	s := newSender(f, new(SendCounts))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.send(ctx, entry("m"))
	assert.Equal(t, context.DeadlineExceeded, err)
	close(f.gate)
	require.Eventually(t, func() bool { return !s.writing() }, 5*time.Second, time.Millisecond)
}

// A Send whose ctx ends while it is queued behind a write is left unwritten
// (and counted), while the Sends queued beside it go out in the next write.
func TestSenderLeavesEndedSendsUnwritten(t *testing.T) {
	f := &fakeStrategy{isDuplex: true, gate: make(chan struct{})}
	counts := new(SendCounts)
	s := newSender(f, counts)
	first := sendAll(s, "first", 1)
	require.Eventually(t, func() bool { w, _ := f.snapshot(); return len(w) == 1 }, 5*time.Second, time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- s.send(ctx, entry("ended")) }()
	require.Eventually(t, func() bool { return s.queued() == 1 }, 5*time.Second, time.Millisecond)
	rest := sendAll(s, "rest", 3)
	require.Eventually(t, func() bool { return s.queued() == 4 }, 5*time.Second, time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-ended, context.Canceled)
	close(f.gate)
	for _, err := range append(first(), rest()...) {
		require.NoError(t, err)
	}
	writes, _ := f.snapshot()
	require.Len(t, writes, 2)
	assert.ElementsMatch(t, []string{"rest-0", "rest-1", "rest-2"}, writes[1], "the ended Send is not written")
	assert.Equal(t, int64(1), counts.Abandoned.Load())
	assert.Equal(t, int64(4), counts.Sent.Load())
}

// Close waits for the queue to be written (within its ctx), closes the
// strategy, and refuses later Sends. If its ctx ends first, what is still
// queued fails unsent, and Close still returns only once the writes under
// way are over: no writer touches Redis after it.
func TestSenderClose(t *testing.T) {
	f := &fakeStrategy{gate: make(chan struct{})}
	s := newSender(f, new(SendCounts))
	// Both pipeline writers get stuck in a write of one Send each, then
	// three Sends queue behind them.
	var waits []func() []error
	for i, n := range []int{1, 1, 3} {
		waits = append(waits, sendAll(s, fmt.Sprint("m", i), n))
		require.Eventually(t, func() bool {
			w, _ := f.snapshot()
			return len(w) == min(i+1, 2) && s.queued() == map[int]int{0: 0, 1: 0, 2: 3}[i]
		}, 5*time.Second, time.Millisecond)
	}
	pending := func() []error {
		var errs []error
		for _, w := range waits {
			errs = append(errs, w()...)
		}
		return errs
	}
	inWrites := 2

	short, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	closed := make(chan struct{})
	go func() { s.close(short); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a write was under way")
	case <-time.After(100 * time.Millisecond):
	}
	assert.ErrorIs(t, s.send(context.Background(), entry("late")), ErrClosed)
	close(f.gate)
	<-closed
	assert.False(t, s.writing())
	assert.Equal(t, int64(1), f.closes.Load())
	var stored, refused int
	for _, err := range pending() {
		if err == nil {
			stored++
		} else {
			assert.ErrorIs(t, err, ErrClosed)
			refused++
		}
	}
	assert.Equal(t, inWrites, stored, "the Sends in the writes under way are stored")
	assert.Equal(t, 5-inWrites, refused, "the Sends still queued when ctx ended fail unsent")
	w, _ := f.snapshot()
	assert.Len(t, w, 2, "no write starts after ctx ended")

	s.close(context.Background()) // idempotent
	assert.Equal(t, int64(2), f.closes.Load())
}

// A Send whose resend Close refuses (Close came during its retry's pause)
// says that it may have been stored: the write that failed may have run. One
// refused before any write gets the bare ErrClosed.
func TestSenderClosedDuringARetrysPause(t *testing.T) {
	f := &fakeStrategy{isDuplex: true, policy: retryPolicy{max: 3, backoff: backoff.Exponential{Base: 300 * time.Millisecond, Max: 300 * time.Millisecond}},
		outcome: func(string, int) error { return io.EOF }}
	s := newSender(f, new(SendCounts))
	done := make(chan error, 1)
	go func() { done <- s.send(context.Background(), entry("m")) }()
	require.Eventually(t, func() bool { w, _ := f.snapshot(); return len(w) == 1 }, 5*time.Second, time.Millisecond)
	s.close(context.Background())
	err := <-done
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, err, ErrClosedInFlight)
	w, _ := f.snapshot()
	assert.Len(t, w, 1, "no resend after Close")
	err = s.send(context.Background(), entry("late"))
	assert.ErrorIs(t, err, ErrClosed)
	assert.NotErrorIs(t, err, ErrClosedInFlight)
}

// A Send elected writer yields once on one server, more on a Cluster.
func TestSenderElectYields(t *testing.T) {
	counts := &SendCounts{}
	assert.Equal(t, 1, newSender(&sendStream{}, counts).electYields)
	assert.Equal(t, clusterElectYields, newSender(&sendCluster{}, counts).electYields)
	assert.Greater(t, clusterElectYields, 1)
}
