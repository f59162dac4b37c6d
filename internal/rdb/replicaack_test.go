package rdb

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// outcomes records what each request of a group learnt.
type outcomes []error

type slotCompleter struct {
	out *outcomes
	i   int
}

func (c slotCompleter) Complete(err error) { (*c.out)[c.i] = err }

func newGroupOf(n int, ack ReplicaAck) (*ackGroup, *outcomes) {
	out := make(outcomes, n)
	reqs := make([]Completer, n)
	for i := range reqs {
		out[i] = errors.New("not completed")
		reqs[i] = slotCompleter{&out, i}
	}
	return newAckGroup(ack, reqs), &out
}

func TestAckGroup(t *testing.T) {
	ack := ReplicaAck{Replicas: 2, Timeout: 50 * time.Millisecond}
	refused := ReplyError("WRONGTYPE Operation against a key holding the wrong kind of value")

	g, out := newGroupOf(3, ack)
	g.Complete(nil)
	g.Complete(refused)
	g.Complete(nil)
	assert.Error(t, (*out)[0], "nothing completes before WAIT answers")
	g.CompleteCount(2, nil)
	assert.Equal(t, outcomes{nil, refused, nil}, *out, "enough replicas: each ZADD's own outcome")

	g, out = newGroupOf(2, ack)
	g.Complete(nil)
	g.Complete(nil)
	g.CompleteCount(1, nil)
	for _, err := range *out {
		assert.ErrorIs(t, err, ErrNotReplicated)
		assert.ErrorContains(t, err, "1 of 2 replicas")
	}

	g, out = newGroupOf(2, ack)
	g.Complete(nil)
	g.Complete(io.EOF) // the connection failed: the rest complete with its error
	g.Complete(io.EOF)
	assert.ErrorIs(t, (*out)[0], ErrNotReplicated)
	assert.ErrorIs(t, (*out)[0], io.EOF, "the wait's failure is wrapped, so the send is retried")
	assert.True(t, retryable((*out)[0]))
	assert.Equal(t, io.EOF, (*out)[1])
	assert.False(t, retryable(ack.outcome(0, nil)), "too few replicas is final")
}

func TestParseInteger(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{{"0", 0, true}, {"1", 1, true}, {"-1", -1, true}, {"123456789012345678", 123456789012345678, true},
		{"", 0, false}, {"-", 0, false}, {"1x", 0, false}, {"1234567890123456789", 0, false}} {
		got, ok := parseInteger([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}
