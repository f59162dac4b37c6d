package alarm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modes runs f on an alarm of each kind: the timerfd (where there is one)
// and the runtime timer.
func modes(t *testing.T, f func(t *testing.T, newAlarm func() *Alarm)) {
	t.Run("timerfd", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skip("timerfd is Linux's")
		}
		f(t, New)
	})
	t.Run("timer", func(t *testing.T) {
		f(t, func() *Alarm {
			a := New()
			a.noFD = true
			return a
		})
	})
}

func TestSleepLastsItsDuration(t *testing.T) {
	modes(t, func(t *testing.T, newAlarm func() *Alarm) {
		a := newAlarm()
		defer a.Close()
		for _, d := range []time.Duration{time.Millisecond, 7 * time.Millisecond, 30 * time.Millisecond} {
			start := time.Now()
			a.Sleep(d)
			took := time.Since(start)
			assert.GreaterOrEqual(t, took, d, "Sleep(%v) returned early", d)
			assert.Less(t, took, d+time.Second, "Sleep(%v) overslept", d)
		}
	})
}

func TestSleepOfNothingReturnsAtOnce(t *testing.T) {
	modes(t, func(t *testing.T, newAlarm func() *Alarm) {
		a := newAlarm()
		defer a.Close()
		start := time.Now()
		a.Sleep(0)
		a.Sleep(-time.Second)
		assert.Less(t, time.Since(start), 100*time.Millisecond)
	})
}

func TestWakeEndsASleep(t *testing.T) {
	modes(t, func(t *testing.T, newAlarm func() *Alarm) {
		a := newAlarm()
		defer a.Close()
		a.Sleep(time.Millisecond) // opens the timerfd
		done := make(chan time.Duration)
		go func() {
			start := time.Now()
			a.Sleep(time.Hour)
			done <- time.Since(start)
		}()
		time.Sleep(20 * time.Millisecond)
		a.Wake()
		select {
		case took := <-done:
			assert.GreaterOrEqual(t, took, 10*time.Millisecond, "returned before the Wake")
		case <-time.After(5 * time.Second):
			t.Fatal("Wake did not end the Sleep")
		}
	})
}

func TestWakeBeforeSleepIsKept(t *testing.T) {
	modes(t, func(t *testing.T, newAlarm func() *Alarm) {
		a := newAlarm()
		defer a.Close()
		for range 3 { // before the first Sleep, and with the timerfd open
			a.Wake()
			start := time.Now()
			a.Sleep(time.Hour)
			assert.Less(t, time.Since(start), time.Second, "a Wake before Sleep was lost")
			// The Wake is used up: the next Sleep lasts.
			start = time.Now()
			a.Sleep(20 * time.Millisecond)
			assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond, "one Wake ended two Sleeps")
		}
	})
}

func TestCloseEndsASleepAndLaterCalls(t *testing.T) {
	modes(t, func(t *testing.T, newAlarm func() *Alarm) {
		a := newAlarm()
		a.Sleep(time.Millisecond)
		done := make(chan struct{})
		go func() {
			a.Sleep(time.Hour)
			close(done)
		}()
		time.Sleep(20 * time.Millisecond)
		require.NoError(t, a.Close())
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("Close did not end the Sleep")
		}
		start := time.Now()
		a.Sleep(time.Hour)
		assert.Less(t, time.Since(start), time.Second, "Sleep after Close waited")
		a.Wake()
		assert.NoError(t, a.Close())
	})
}

// TestNoWakeIsLost races wakes against a sleeper: each Wake follows a
// counter's increment, and the sleeper sleeps only while it has not seen the
// last one. A lost Wake leaves it asleep for its full minute.
func TestNoWakeIsLost(t *testing.T) {
	modes(t, func(t *testing.T, newAlarm func() *Alarm) {
		a := newAlarm()
		defer a.Close()
		const wakes = 3000
		var sent atomic.Int64
		var wg sync.WaitGroup
		for w := range 3 {
			wg.Go(func() {
				for i := range wakes / 3 {
					sent.Add(1)
					a.Wake()
					if (i+w)%7 == 0 {
						runtime.Gosched()
					}
				}
			})
		}
		deadline := time.Now().Add(30 * time.Second)
		for sent.Load() < wakes {
			seen := sent.Load()
			start := time.Now()
			a.Sleep(time.Minute)
			if took := time.Since(start); took > 10*time.Second && sent.Load() > seen {
				t.Fatalf("a Wake was lost: slept %v after wake %d of %d", took, seen, wakes)
			}
			require.True(t, time.Now().Before(deadline), "wakes not seen in time")
		}
		wg.Wait()
	})
}

func TestTimerFDIsUsedOnLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("timerfd is Linux's")
	}
	a := New()
	a.Sleep(time.Millisecond)
	assert.NotNil(t, a.fd.Load(), "the alarm fell back to a runtime timer")
	assert.False(t, a.noFD)
	require.NoError(t, a.Close())
	assert.Nil(t, a.fd.Load())
}
