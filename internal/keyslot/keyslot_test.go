package keyslot

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOf checks Of against hash slots Redis documents and against
// the hash tag rules.
func TestOf(t *testing.T) {
	tests := []struct {
		key  string
		want int
	}{
		{"123456789", 0x31c3 % Count}, // the CRC-16/XMODEM check value
		{"somekey", 11058},
		{"foo{hash_tag}", 2515},
		{"hash_tag", 2515},
		{"", 0},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Of(tt.key), "Of(%q)", tt.key)
	}
	same := [][2]string{
		{"{user1000}.following", "{user1000}.followers"},
		{"ns:{t:3}:store", "t:3"},
		{"foo{}{bar}", "foo{}{bar}"}, // an empty first tag: the whole key
		{"foo{{bar}}zap", "{bar"},    // the tag ends at the first "}"
		{"foo{bar}{zap}", "bar"},     // only the first tag counts
		{"{unclosed", "{unclosed"},   // no "}": the whole key
		{"}{x}", "x"},                // a "}" before the "{" does not close it
	}
	for _, p := range same {
		assert.Equal(t, Of(p[1]), Of(p[0]), "Of(%q) vs Of(%q)", p[0], p[1])
	}
}
