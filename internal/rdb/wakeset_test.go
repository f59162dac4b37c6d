package rdb

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
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
