package rmq

import (
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// Histogram is a snapshot of a fixed-bucket histogram of durations, in the
// shape Prometheus exposes: Counts[i] observations fell at or below
// Bounds[i] and above Bounds[i-1]; the last count (one more than the
// bounds) is everything above the last bound.
type Histogram struct {
	Bounds []float64 // upper bounds in seconds, ascending
	Counts []uint64  // per bucket, not cumulative; len(Bounds)+1
	Count  uint64    // observations
	Sum    float64   // their sum in seconds
}

// Quantile estimates the q-quantile (0 < q ≤ 1) by linear interpolation
// within its bucket, as Prometheus's histogram_quantile does; 0 without
// observations. An estimate in the last bucket is the last bound.
func (h Histogram) Quantile(q float64) time.Duration {
	if h.Count == 0 || len(h.Bounds) == 0 {
		return 0
	}
	rank := q * float64(h.Count)
	var seen float64
	for i, n := range h.Counts {
		if seen+float64(n) < rank || n == 0 {
			seen += float64(n)
			continue
		}
		if i == len(h.Bounds) {
			break
		}
		lo := 0.0
		if i > 0 {
			lo = h.Bounds[i-1]
		}
		s := lo + (h.Bounds[i]-lo)*(rank-seen)/float64(n)
		return time.Duration(s * float64(time.Second))
	}
	return time.Duration(h.Bounds[len(h.Bounds)-1] * float64(time.Second))
}

// Bucket bounds, in seconds.
var (
	// LatenessBuckets resolve the punctuality guarantee: 0.5 ms to 60 s.
	LatenessBuckets = []float64{0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	// DurationBuckets cover listener calls: 0.1 ms to 60 s.
	DurationBuckets = []float64{0.0001, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
)

// histogram records durations into fixed buckets without locks.
type histogram struct {
	boundsNs []int64 // upper bounds in ns
	bounds   []float64
	counts   []atomic.Uint64 // len(bounds)+1
	// sumUs is the sum in µs (rounded per observation): in ns it wrapped
	// after 292 years in all, which a lagging process reaches (a million
	// messages delivered an hour late); in µs after 292,000.
	sumUs atomic.Int64
}

func newHistogram(bounds []float64) *histogram {
	h := &histogram{bounds: bounds, boundsNs: make([]int64, len(bounds)), counts: make([]atomic.Uint64, len(bounds)+1)}
	for i, b := range bounds {
		h.boundsNs[i] = int64(math.Round(b * 1e9))
	}
	return h
}

// emptyHistogram returns the snapshot of a histogram of bounds that holds
// nothing.
func emptyHistogram(bounds []float64) Histogram {
	return Histogram{Bounds: slices.Clone(bounds), Counts: make([]uint64, len(bounds)+1)}
}

// restoredHistogram returns a histogram of bounds holding s, a snapshot of one of
// the same bounds.
func restoredHistogram(bounds []float64, s Histogram) *histogram {
	h := newHistogram(bounds)
	for i := range min(len(s.Counts), len(h.counts)) {
		h.counts[i].Store(s.Counts[i])
	}
	h.sumUs.Store(int64(math.Round(s.Sum * 1e6)))
	return h
}

// observe records d (negative counts as zero).
func (h *histogram) observe(d time.Duration) {
	ns := max(int64(d), 0)
	i, _ := slices.BinarySearch(h.boundsNs, ns)
	h.counts[i].Add(1)
	h.sumUs.Add((ns + 500) / 1000)
}

// add adds o, a histogram of the same bounds, to h.
func (h *Histogram) add(o Histogram) {
	for i := range o.Counts {
		h.Counts[i] += o.Counts[i]
	}
	h.Count += o.Count
	h.Sum += o.Sum
}

// snapshot returns the histogram's current state.
func (h *histogram) snapshot() Histogram {
	s := Histogram{Bounds: slices.Clone(h.bounds), Counts: make([]uint64, len(h.counts))} // the caller's own: never the package's buckets
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = float64(h.sumUs.Load()) / 1e6
	return s
}
