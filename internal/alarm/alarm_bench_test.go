//go:build unix

package alarm

import (
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"
)

// BenchmarkPacedWakes is a consuming thread's sleep under punctual traffic:
// 16 goroutines share wakes due every 2 ms (500/s, each goroutine's 32 ms
// apart) and sleep until each. It reports the process's CPU and voluntary
// context switches per wake and the median and p99 lateness, with the alarm
// and with the runtime timer it replaces (the alarm's fallback). ns/op is
// the pacing, not a cost.
//
//	go test ./internal/alarm -run XXX -bench PacedWakes -benchtime 2000x -count 5
func BenchmarkPacedWakes(b *testing.B) {
	for _, mode := range []struct {
		name string
		noFD bool
	}{{"alarm", false}, {"timer", true}} {
		b.Run(mode.name, func(b *testing.B) {
			const sleepers = 16
			const gap = 2 * time.Millisecond
			late := make([]time.Duration, b.N)
			start := time.Now().Add(20 * time.Millisecond)
			var ru0, ru1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			b.ResetTimer()
			var wg sync.WaitGroup
			for g := range sleepers {
				wg.Go(func() {
					a := New()
					a.noFD = mode.noFD
					defer a.Close()
					for i := g; i < b.N; i += sleepers {
						due := start.Add(time.Duration(i) * gap)
						for d := time.Until(due); d > 0; d = time.Until(due) {
							a.Sleep(d)
						}
						late[i] = time.Since(due)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			cpu := time.Duration(syscall.TimevalToNsec(ru1.Utime) - syscall.TimevalToNsec(ru0.Utime) +
				syscall.TimevalToNsec(ru1.Stime) - syscall.TimevalToNsec(ru0.Stime))
			slices.Sort(late)
			n := float64(b.N)
			b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/wake")
			b.ReportMetric(float64(ru1.Nvcsw-ru0.Nvcsw)/n, "switches/wake")
			b.ReportMetric(float64(late[b.N/2].Microseconds()), "late-p50-µs")
			b.ReportMetric(float64(late[b.N*99/100].Microseconds()), "late-p99-µs")
		})
	}
}

// BenchmarkWakeBurst is a thread given 256 slots at once (a start, a
// rebalance) or sent a burst of wake-ups while it works: 256 Wakes, then
// the Sleep they end. ns/op is per Wake.
//
//	go test ./internal/alarm -run XXX -bench WakeBurst -count 5
func BenchmarkWakeBurst(b *testing.B) {
	a := New()
	defer a.Close()
	a.Sleep(time.Nanosecond) // opens the timerfd
	for i := 0; b.Loop(); i++ {
		a.Wake()
		if i%256 == 255 {
			a.Sleep(time.Hour) // returns at once: the burst's Wakes end it
		}
	}
}
