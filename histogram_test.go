package rmq

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestHistogramBucketsAndQuantiles(t *testing.T) {
	h := newHistogram([]float64{0.001, 0.01, 0.1})
	for _, d := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 50 * time.Millisecond, time.Second, -time.Second} {
		h.observe(d)
	}
	s := h.snapshot()
	assert.Equal(t, []uint64{3, 1, 1, 1}, s.Counts, "a bound belongs to its bucket; negatives count as zero")
	assert.Equal(t, uint64(6), s.Count)
	assert.InDelta(t, 1.053, s.Sum, 1e-9)
	assert.Equal(t, time.Duration(0), Histogram{}.Quantile(0.5))
	assert.Equal(t, 100*time.Millisecond, s.Quantile(1), "the last bucket reads as the last bound")
	assert.InDelta(t, float64(time.Millisecond), float64(s.Quantile(0.5)), float64(time.Microsecond), "3 of 6 at or below 1ms")
	assert.InDelta(t, float64(5500*time.Microsecond), float64(s.Quantile(3.5/6)), float64(time.Microsecond), "half-way through the second bucket")
}

func TestHistogramIsSafeForConcurrentUse(t *testing.T) {
	h := newHistogram(LatenessBuckets)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.observe(time.Duration(g*i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, uint64(8000), h.snapshot().Count)
}
