package rdb

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The commits of one pop travel as "=n", the prepare score, then the members
// in byte order (the order prepare keeps entries of one score in); any other
// outcomes travel as triples in their own order.
func TestAppendOutcomes(t *testing.T) {
	pop := []Outcome{{member: []byte("m2"), prepare: 7016, action: Commit}, {member: []byte("m10"), prepare: 7016, action: Commit},
		{member: []byte("a"), prepare: 7016, action: Commit}}
	assert.Equal(t, []any{"x", "=3", int64(7016), []byte("a"), []byte("m10"), []byte("m2")}, appendOutcomes([]any{"x"}, pop))
	assert.Equal(t, []byte("m2"), pop[0].member, "the outcomes themselves keep their order")

	mixed := []Outcome{pop[0], {member: []byte("b"), prepare: 7016, action: Rollback}}
	assert.Equal(t, []any{2, []byte("m2"), int64(7016), "c", []byte("b"), int64(7016), "r"}, appendOutcomes(nil, mixed))
}

// BenchmarkAppendOutcomes measures encoding the commits of a 1,000-message
// pop (one prepare score) as the cycle script's arguments, members in byte
// order: what a settled batch costs the client before it is written.
func BenchmarkAppendOutcomes(b *testing.B) {
	outs := make([]Outcome, 1000)
	for i := range outs {
		// Payload-like members: a shared prefix, then bytes that differ.
		outs[i] = Outcome{member: fmt.Appendf(nil, "c-%010d-%016x%036d", i, uint64(i)*0x9e3779b97f4a7c15, 0),
			prepare: 1795300000016, action: Commit}
	}
	args := make([]any, 0, 8+len(outs))
	b.ReportAllocs()
	for b.Loop() {
		args = appendOutcomes(args[:0], outs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(outs)), "ns/msg")
}
