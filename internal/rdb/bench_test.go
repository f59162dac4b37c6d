package rdb

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"testing"
)

// pairsReply is a cycle reply of n members with distinct store scores.
func pairsReply(n int) []any {
	raw := []any{int64(1795300000123), int64(-1)}
	for i := range n {
		raw = append(raw, fmt.Sprintf("%064d", i), strconv.Itoa(1000+i))
	}
	return raw
}

// runsReply is a cycle reply of n members of one store score, in the run form.
func runsReply(n int) []any {
	raw := []any{int64(1795300000123), int64(-1), int64(1), int64(n), "500"}
	for i := range n {
		raw = append(raw, fmt.Sprintf("%064d", i))
	}
	return raw
}

// BenchmarkParseCycle measures decoding a 128-message pop reply: distinct
// priorities (member, score pairs) and one priority (the run form).
func BenchmarkParseCycle(b *testing.B) {
	for _, form := range []struct {
		name string
		raw  []any
	}{{"pairs", pairsReply(128)}, {"runs", runsReply(128)}} {
		b.Run(form.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := parseCycle(form.raw, true); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*128), "ns/msg")
		})
	}
}

// BenchmarkGroupEntries measures grouping a 512-message pipeline by key.
func BenchmarkGroupEntries(b *testing.B) {
	keys := NewKeyspace("bench").Slots("t", 64)
	entries := make([]Entry, 512)
	for i := range entries {
		entries[i] = Entry{Key: keys[i%64].Store, Score: float64(i), Member: fmt.Appendf(nil, "%064d", i)}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = groupEntries(entries)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*512), "ns/msg")
}

// BenchmarkWakePublications measures building the wake-ups of a 512-message
// write (one topic of 64 slots) with the reused buffers of the stream writer.
func BenchmarkWakePublications(b *testing.B) {
	ks := NewKeyspace("bench")
	channel := ks.WakeChannel("t")
	entries := make([]Entry, 512)
	for i := range entries {
		member := fmt.Appendf(nil, "%064d", i)
		slot := int(crc32.ChecksumIEEE(member) & 63)
		entries[i] = Entry{Key: ks.Slot("t", slot).Store, Score: 100, Member: member, Wake: Wake{Channel: channel, Slot: slot}}
	}
	b.ReportAllocs()
	var ws wakeSet
	var pubs []Publication
	var buf []byte
	for b.Loop() {
		pubs, buf = entryWakes(&ws, entries, pubs[:0], buf)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*512), "ns/msg")
}
