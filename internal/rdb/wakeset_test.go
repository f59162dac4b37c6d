package rdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// payloads maps each publication's channel to its payload.
func payloads(pubs []Publication) map[string]string {
	m := make(map[string]string, len(pubs))
	for _, p := range pubs {
		m[p.Channel] = string(p.Payload)
	}
	return m
}

// One wake-up per topic names each slot once, in order of first appearance,
// with its earliest due time, past the 32 slots where the set starts to
// index; a reused set starts afresh.
func TestWakeSetKeepsTheEarliestDuePerSlot(t *testing.T) {
	const a, b = "wake:a", "wake:b"
	var entries []Entry
	var want []string
	for slot := range 40 {
		entries = append(entries, Entry{Wake: Wake{Channel: a, Slot: slot, DueMs: int64(1000 + slot)}})
		want = append(want, fmt.Sprintf("%d:%d", slot, 500+slot))
	}
	for slot := range 40 { // the same slots again, earlier
		entries = append(entries, Entry{Wake: Wake{Channel: a, Slot: slot, DueMs: int64(500 + slot)}})
	}
	entries = append(entries, Entry{Wake: Wake{Channel: b, Slot: 3, DueMs: 0}}, Entry{Wake: Wake{Channel: a, Slot: 7, DueMs: 9000}},
		Entry{Key: "no wake-up", Wake: Wake{Slot: 5}})

	var ws wakeSet
	pubs, buf := entryWakes(&ws, entries, nil, nil)
	assert.Equal(t, map[string]string{a: strings.Join(want, ","), b: "3:0"}, payloads(pubs))
	wakes := make([]Wake, len(entries))
	for i, e := range entries {
		wakes[i] = e.Wake
	}
	assert.Equal(t, payloads(pubs), payloads(WakePublications(wakes)), "the one-off and the reused builder agree")

	pubs, _ = entryWakes(&ws, []Entry{{Wake: Wake{Channel: b, Slot: 7, DueMs: 5}}, {Wake: Wake{Channel: b, Slot: 3, DueMs: 9}}}, pubs[:0], buf)
	assert.Equal(t, map[string]string{b: "7:5,3:9"}, payloads(pubs))
}

// recordHandler keeps every record logged through it.
type recordHandler struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r)
	return nil
}

// attr returns the value of record i's attribute key.
func (h *recordHandler) attr(i int, key string) slog.Value {
	h.mu.Lock()
	defer h.mu.Unlock()
	var v slog.Value
	h.records[i].Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
		}
		return true
	})
	return v
}

// Failed wake-ups of one broker log one line per wakeLogEvery, which counts
// the failures not logged since the line before; a success logs nothing.
func TestWakeFailuresAreLoggedOncePerInterval(t *testing.T) {
	h := &recordHandler{}
	w := &wakeOutcome{log: slog.New(h)}
	boom := errors.New("ERR unknown command 'SPUBLISH'")
	w.Complete(nil)
	require.Empty(t, h.records)
	for range 1000 {
		w.Complete(boom)
	}
	require.Len(t, h.records, 1, "a burst of failures logs one line")
	assert.Equal(t, int64(0), h.attr(0, "unlogged").Int64())
	assert.Equal(t, boom.Error(), h.attr(0, "err").Any().(error).Error())
	w.mu.Lock()
	w.last = w.last.Add(-wakeLogEvery) // the interval is over
	w.mu.Unlock()
	w.Complete(boom)
	require.Len(t, h.records, 2)
	assert.Equal(t, int64(999), h.attr(1, "unlogged").Int64(), "the failures since the last line")
	w.Complete(boom)
	assert.Len(t, h.records, 2, "within the interval again")
}
