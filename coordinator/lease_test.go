package coordinator_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/coordinator"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestNewLease(t *testing.T) {
	l, g := coordinator.NewLease("t", 3, 1, 42)
	require.Same(t, l, g.Lease())
	assert.Equal(t, "t", l.Topic())
	assert.Equal(t, 3, l.Slot())
	assert.Equal(t, 1, l.Thread())
	assert.Equal(t, int64(42), l.Token())
	assert.True(t, l.Valid(), "no deadline yet: valid")
	assert.Equal(t, time.Duration(math.MaxInt64), l.Remaining())
	assert.NoError(t, l.Context().Err())
	assert.False(t, closed(l.Revoking()))
	assert.False(t, closed(g.Released()))
}

func TestLeaseDeadline(t *testing.T) {
	t.Run("SetDeadline", func(t *testing.T) {
		l, g := coordinator.NewLease("t", 0, 0, 0)
		g.SetDeadline(time.Hour)
		assert.True(t, l.Valid())
		assert.InDelta(t, time.Hour, l.Remaining(), float64(time.Minute))
		g.SetDeadline(-time.Millisecond) // may move back
		assert.False(t, l.Valid())
		assert.Negative(t, l.Remaining())
		assert.NoError(t, l.Context().Err(), "a passed deadline does not cancel the context")
	})
	t.Run("SetDeadlineAt", func(t *testing.T) {
		l, g := coordinator.NewLease("t", 0, 0, 0)
		g.SetDeadlineAt(time.Now().Add(30 * time.Millisecond))
		assert.True(t, l.Valid())
		assert.LessOrEqual(t, l.Remaining(), 30*time.Millisecond)
		time.Sleep(40 * time.Millisecond)
		assert.False(t, l.Valid(), "the deadline passed")
		g.SetDeadlineAt(time.Now().Add(time.Hour))
		assert.True(t, l.Valid(), "set again")
	})
	t.Run("SetDeadlineAt without a monotonic reading", func(t *testing.T) {
		l, g := coordinator.NewLease("t", 0, 0, 0)
		g.SetDeadlineAt(time.Now().Add(time.Hour).Round(0))
		assert.InDelta(t, time.Hour, l.Remaining(), float64(time.Minute))
		g.SetDeadlineAt(time.Now().Add(-time.Second).Round(0))
		assert.False(t, l.Valid())
	})
}

func TestLeaseRevoke(t *testing.T) {
	l, g := coordinator.NewLease("t", 0, 0, 0)
	g.Revoke()
	g.Revoke() // once
	assert.True(t, closed(l.Revoking()))
	assert.True(t, l.Valid(), "a revoked lease stays valid until released")
	assert.NoError(t, l.Context().Err())
	assert.False(t, closed(g.Released()))
	l.Release()
	assert.True(t, closed(g.Released()))
	assert.False(t, l.Valid())
}

func TestLeaseLoss(t *testing.T) {
	for name, lose := range map[string]func(*coordinator.Lease, *coordinator.Grant){
		"Grant.Lose":   func(_ *coordinator.Lease, g *coordinator.Grant) { g.Lose() },
		"Lease.Fenced": func(l *coordinator.Lease, _ *coordinator.Grant) { l.Fenced() },
	} {
		t.Run(name, func(t *testing.T) {
			l, g := coordinator.NewLease("t", 0, 0, 7)
			g.SetDeadline(time.Hour)
			lose(l, g)
			assert.False(t, l.Valid())
			assert.True(t, closed(l.Revoking()))
			assert.ErrorIs(t, context.Cause(l.Context()), coordinator.ErrLeaseLost)
			assert.False(t, closed(g.Released()), "the holder still releases")
			lose(l, g) // again: no effect
			l.Release()
			assert.True(t, closed(g.Released()))
			assert.ErrorIs(t, context.Cause(l.Context()), coordinator.ErrLeaseLost, "the first cause stays")
		})
	}
}

func TestLeaseRelease(t *testing.T) {
	l, g := coordinator.NewLease("t", 0, 0, 0)
	l.Release()
	l.Release() // once
	assert.False(t, l.Valid())
	assert.True(t, closed(l.Revoking()))
	assert.True(t, closed(g.Released()))
	assert.ErrorIs(t, context.Cause(l.Context()), context.Canceled)
	g.Lose() // after the release: the cause stays
	assert.ErrorIs(t, context.Cause(l.Context()), context.Canceled)
	g.SetDeadline(time.Hour)
	assert.False(t, l.Valid(), "a new deadline does not bring a released lease back")
}

// AfterRelease runs each function once, after the release: those arranged
// before it when it comes (not at a loss or a revocation), those arranged
// after it at once.
func TestLeaseAfterRelease(t *testing.T) {
	l, g := coordinator.NewLease("t", 0, 0, 0)
	ran := make(chan string, 4)
	g.AfterRelease(func() { ran <- "first" })
	g.AfterRelease(func() { ran <- "second" })
	g.Revoke()
	g.Lose()
	select {
	case f := <-ran:
		t.Fatalf("%s ran before the release", f)
	case <-time.After(50 * time.Millisecond):
	}
	l.Release()
	l.Release()
	var got []string
	for range 2 {
		select {
		case f := <-ran:
			got = append(got, f)
		case <-time.After(5 * time.Second):
			t.Fatal("not run after the release")
		}
	}
	assert.ElementsMatch(t, []string{"first", "second"}, got)
	g.AfterRelease(func() { ran <- "late" })
	select {
	case f := <-ran:
		assert.Equal(t, "late", f)
	case <-time.After(5 * time.Second):
		t.Fatal("arranged after the release, not run")
	}
	select {
	case f := <-ran:
		t.Fatalf("%s ran twice", f)
	case <-time.After(50 * time.Millisecond):
	}
}

func TestLeaseConcurrentUse(t *testing.T) {
	l, g := coordinator.NewLease("t", 0, 0, 0)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { g.SetDeadline(time.Hour); _ = l.Valid(); _ = l.Remaining() })
		wg.Go(g.Revoke)
		wg.Go(g.Lose)
		wg.Go(l.Fenced)
		wg.Go(l.Release)
	}
	wg.Wait()
	assert.False(t, l.Valid())
	assert.True(t, closed(g.Released()))
	assert.True(t, closed(l.Revoking()))
}

// releaser releases every revoked lease at once and records assignments.
type releaser struct {
	mu       sync.Mutex
	assigned []*coordinator.Lease
}

func (r *releaser) Assigned(l *coordinator.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.assigned = append(r.assigned, l)
}

func (r *releaser) Revoked(l *coordinator.Lease) { go l.Release() }

func TestLocalAssignsEverySlotAndRevokesOnStop(t *testing.T) {
	h := &releaser{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	m := coordinator.Member{Namespace: "ns", Topics: []coordinator.TopicThreads{
		{Topic: "a", SlotAmount: 8, Threads: 3}, {Topic: "b", SlotAmount: 2, Threads: 0}}}
	go func() { done <- coordinator.NewLocal().Run(ctx, m, h) }()
	require.Eventually(t, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.assigned) == 10
	}, 5*time.Second, time.Millisecond)
	h.mu.Lock()
	leases := append([]*coordinator.Lease(nil), h.assigned...)
	h.mu.Unlock()
	for _, l := range leases {
		threads := map[string]int{"a": 3, "b": 1}[l.Topic()]
		assert.Equal(t, l.Slot()%threads, l.Thread(), "%s/%d", l.Topic(), l.Slot())
		assert.True(t, l.Valid())
		assert.Zero(t, l.Token())
	}
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	for _, l := range leases {
		assert.True(t, closed(l.Revoking()))
		assert.False(t, l.Valid(), "released")
	}
}

// The context and the channels are made when first asked for: asked before
// the events, they close and end when the events come; asked after, they
// are already closed and ended. IsRevoked and IsReleased agree with them.
func TestLeaseSignalsAskedBeforeAndAfter(t *testing.T) {
	l, g := coordinator.NewLease("t", 0, 0, 0)
	ctx, revoking, released := l.Context(), l.Revoking(), g.Released()
	assert.False(t, l.IsRevoked())
	assert.False(t, g.IsReleased())
	g.Lose()
	assert.True(t, l.IsRevoked())
	assert.True(t, closed(revoking), "asked before the loss")
	assert.ErrorIs(t, context.Cause(ctx), coordinator.ErrLeaseLost)
	assert.False(t, g.IsReleased())
	assert.False(t, closed(released))
	l.Release()
	assert.True(t, g.IsReleased())
	assert.True(t, closed(released), "asked before the release")
	assert.Same(t, ctx, l.Context(), "one context for the lease's life")

	l2, g2 := coordinator.NewLease("t", 0, 0, 0)
	g2.Revoke()
	assert.True(t, l2.IsRevoked())
	assert.False(t, g2.IsReleased())
	assert.NoError(t, l2.Context().Err(), "a revocation ends nothing")
	l2.Release()
	assert.True(t, g2.IsReleased())
	assert.True(t, closed(g2.Released()), "asked after the release")
	assert.ErrorIs(t, context.Cause(l2.Context()), context.Canceled, "made after the release: ended")
}

// Asking for the signals while the lease is revoked, lost and released from
// other goroutines: every one asked for ends (run with -race).
func TestLeaseSignalsAskedConcurrently(t *testing.T) {
	for range 200 {
		l, g := coordinator.NewLease("t", 0, 0, 0)
		var wg sync.WaitGroup
		got := make(chan func() bool, 8)
		for range 2 {
			wg.Go(func() {
				ch := l.Revoking()
				got <- func() bool { return closed(ch) }
			})
			wg.Go(func() {
				ch := g.Released()
				got <- func() bool { return closed(ch) }
			})
			wg.Go(func() {
				ctx := l.Context()
				got <- func() bool { return ctx.Err() != nil }
			})
		}
		wg.Go(g.Revoke)
		wg.Go(g.Lose)
		wg.Go(l.Release)
		wg.Wait()
		close(got)
		for ended := range got {
			require.True(t, ended(), "a signal asked for around the events did not end")
		}
	}
}
