package main

import (
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
)

// lateness records, per message, when its listener started against its due
// time. Messages are payloads of one tag; the index is read back from the
// content.
type lateness struct {
	mu    sync.Mutex
	due   []time.Time
	late  []time.Duration
	seen  []bool
	count int
	extra int // deliveries beyond the first of a message
	done  chan struct{}
}

func newLateness(due []time.Time) *lateness {
	return &lateness{due: due, late: make([]time.Duration, len(due)), seen: make([]bool, len(due)), done: make(chan struct{})}
}

// payloadIndex reads i back from payload(tag, i) for a one-letter tag.
func payloadIndex(p []byte) (int, bool) {
	if len(p) < 12 {
		return 0, false
	}
	i, err := strconv.Atoi(string(p[2:12]))
	return i, err == nil
}

// record notes that the listener for content p started at t.
func (l *lateness) record(p []byte, t time.Time) {
	i, ok := payloadIndex(p)
	if !ok || i < 0 || i >= len(l.due) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen[i] {
		l.extra++
		return
	}
	l.seen[i] = true
	l.late[i] = t.Sub(l.due[i])
	l.count++
	if l.count == len(l.due) {
		close(l.done)
	}
}

// metrics returns p50, p99, max and min lateness in ms, the early and missing counts.
func (l *lateness) metrics() metrics {
	l.mu.Lock()
	defer l.mu.Unlock()
	var v []float64
	early := 0
	for i, ok := range l.seen {
		if ok {
			v = append(v, float64(l.late[i])/float64(time.Millisecond))
			if l.late[i] < 0 {
				early++
			}
		}
	}
	m := metrics{mReceived: float64(len(v)), mMissing: float64(len(l.due) - len(v)), mEarly: float64(early)}
	if len(v) == 0 {
		return m
	}
	slices.Sort(v)
	m[mLateP50] = quantile(v, 0.50)
	m[mLateP99] = quantile(v, 0.99)
	m[mLateMax] = v[len(v)-1]
	m[mLateMin] = v[0]
	return m
}

// quantile of sorted v by the nearest-rank method.
func quantile(v []float64, q float64) float64 {
	k := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(k, len(v)-1))]
}
