package alarm

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestShortSleepsAllEnd sleeps many times for less than the time it takes
// to start waiting, while other goroutines keep the scheduler polling the
// network: an expiry that the poller collects before the sleeper waits must
// still end the sleep. Wakes race the sleeps too.
func TestShortSleepsAllEnd(t *testing.T) {
	modes(t, func(t *testing.T, newAlarm func() *Alarm) {
		a := newAlarm()
		defer a.Close()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		// untilStopped runs f over and over in a goroutine until stop closes.
		untilStopped := func(f func()) {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
						f()
					}
				}
			})
		}
		for range 3 {
			untilStopped(func() {
				runtime.Gosched()
				time.Sleep(time.Microsecond)
			})
		}
		var waking atomic.Bool
		untilStopped(func() {
			if waking.Load() {
				a.Wake()
			}
			time.Sleep(50 * time.Microsecond)
		})
		defer func() {
			close(stop)
			wg.Wait()
		}()
		deadline := time.Now().Add(20 * time.Second)
		for i := range 20000 {
			waking.Store(i%2 == 1)
			d := time.Duration(i%50) * time.Microsecond
			start := time.Now()
			done := make(chan struct{})
			go func() {
				a.Sleep(d + time.Nanosecond)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Sleep(%v) #%d did not end after %v", d, i, time.Since(start))
			}
			if time.Now().After(deadline) {
				t.Logf("%d sleeps in 20 s", i)
				return
			}
		}
	})
}
