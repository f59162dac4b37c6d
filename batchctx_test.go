package rmq

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type batchCtxKey struct{}

// The listeners' context behaves as context.WithDeadline's does, whether or
// not a listener has made it real (Done, Value) before the event.
func TestBatchCtxActsAsWithDeadline(t *testing.T) {
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
	for _, early := range []bool{false, true} {
		name := map[bool]string{false: "lazy", true: "made early"}[early]
		t.Run(name+"/deadline", func(t *testing.T) {
			at := time.Now().Add(30 * time.Millisecond)
			c := newBatchCtx(context.Background(), at)
			defer c.end()
			if early {
				_ = c.Done()
			}
			d, ok := c.Deadline()
			assert.True(t, ok)
			assert.Equal(t, at, d)
			assert.NoError(t, c.Err())
			time.Sleep(time.Until(at) + time.Millisecond)
			if !early {
				// Past the deadline, before any timer: Err knows it.
				assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
			}
			// The real one's timer may fire a little after the deadline.
			assert.True(t, closed(c.Done()))
			assert.ErrorIs(t, c.Err(), context.DeadlineExceeded)
			assert.ErrorIs(t, context.Cause(c), context.DeadlineExceeded)
		})
		t.Run(name+"/end", func(t *testing.T) {
			c := newBatchCtx(context.Background(), time.Now().Add(time.Hour))
			child, cancel := context.WithCancel(context.Background())
			defer cancel()
			if early {
				child, cancel = context.WithCancel(c)
				defer cancel()
			}
			c.end()
			assert.ErrorIs(t, c.Err(), context.Canceled)
			assert.True(t, closed(c.Done()), "Done asked for after the end")
			if early {
				assert.True(t, closed(child.Done()), "a context derived before the end")
			}
		})
		t.Run(name+"/parent", func(t *testing.T) {
			cause := errors.New("lease lost")
			parent, cancel := context.WithCancelCause(context.WithValue(context.Background(), batchCtxKey{}, 7))
			c := newBatchCtx(parent, time.Now().Add(time.Hour))
			defer c.end()
			if early {
				_ = c.Done()
			}
			cancel(cause)
			assert.ErrorIs(t, c.Err(), context.Canceled)
			assert.True(t, closed(c.Done()))
			assert.ErrorIs(t, context.Cause(c), cause)
			assert.Equal(t, 7, c.Value(batchCtxKey{}))
		})
	}
}

func TestBatchCtxDeadlineIsTheParentsWhenEarlier(t *testing.T) {
	soon := time.Now().Add(time.Minute)
	parent, cancel := context.WithDeadline(context.Background(), soon)
	defer cancel()
	c := newBatchCtx(parent, soon.Add(time.Hour))
	defer c.end()
	d, ok := c.Deadline()
	require.True(t, ok)
	assert.Equal(t, soon, d)
}

// BenchmarkBatchCtx is a delivery's context around a listener that looks at
// neither Done nor Value, against WithDeadline.
func BenchmarkBatchCtx(b *testing.B) {
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), batchCtxKey{}, 1))
	defer cancel()
	b.Run("batchCtx", func(b *testing.B) {
		for b.Loop() {
			c := newBatchCtx(parent, time.Now().Add(time.Minute))
			if c.Err() != nil {
				b.Fatal("canceled")
			}
			c.end()
		}
	})
	b.Run("WithDeadline", func(b *testing.B) {
		for b.Loop() {
			c, cancel := context.WithDeadline(parent, time.Now().Add(time.Minute))
			if c.Err() != nil {
				b.Fatal("canceled")
			}
			cancel()
		}
	})
}
