package main

import (
	"fmt"
	"strconv"
)

// payloadSize is the size of every message body unless a scenario says otherwise.
const payloadSize = 64

// payloads returns n distinct payloads of payloadSize bytes: "tag-index-"
// followed by hex filler derived from the index (so contents spread evenly
// over slots, like real ids would).
func payloads(n int, tag string) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = payload(tag, i)
	}
	return out
}

func payload(tag string, i int) []byte {
	b := make([]byte, 0, payloadSize)
	b = fmt.Appendf(b, "%s-%010d-", tag, i)
	x := uint64(i) + 0x9e3779b97f4a7c15
	for len(b) < payloadSize {
		x ^= x >> 30
		x *= 0xbf58476d1ce4e5b9
		x ^= x >> 27
		x *= 0x94d049bb133111eb
		x ^= x >> 31
		b = strconv.AppendUint(b, x, 16)
	}
	return b[:payloadSize]
}

// chunks splits items into slices of at most size.
func chunks[T any](items []T, size int) [][]T {
	var out [][]T
	for len(items) > 0 {
		k := min(size, len(items))
		out = append(out, items[:k])
		items = items[k:]
	}
	return out
}
