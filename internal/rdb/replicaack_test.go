package rdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq/internal/testenv"
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

// A write waits for the previous WAIT's answer at most the bound it is
// given, and not at all once it answered.
func TestAckGroupAwait(t *testing.T) {
	g, _ := newGroupOf(1, ReplicaAck{Replicas: 1, Timeout: time.Millisecond})
	start := time.Now()
	g.await(30 * time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond, "returned before its WAIT answered or the bound")
	g.Complete(nil)
	g.CompleteCount(1, nil)
	done := make(chan struct{})
	go func() { g.await(time.Hour); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("await blocked after the WAIT answered")
	}
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

// With replicas to wait for and none answering, the send stream keeps one
// WAIT in flight: a write waits until the one before it answered, and the
// Sends that come meanwhile go together in the next. Sends that trickle in
// then share a few WAITs and each learns its verdict within about two WAIT
// timeouts; were every write's WAIT queued behind the others, each would
// block in its turn, and the last Send would wait for all of them.
func TestStreamKeepsOneWaitInFlight(t *testing.T) {
	srv := testenv.StartRedis(t)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rc.Close()
	ctx := context.Background()
	const timeout = 100 * time.Millisecond
	br := New(rc, NewKeyspace("ack"), WithReplicaAck(ReplicaAck{Replicas: 1, Timeout: timeout}))
	defer br.Close(ctx)
	// The first Send dials; then the counts start.
	require.ErrorIs(t, br.Send(ctx, Entry{Key: "ack:k", Score: 1, Member: []byte("first")}), ErrNotReplicated)
	require.NoError(t, rc.ConfigResetStat(ctx).Err())

	const sends = 20
	var wg sync.WaitGroup
	var worst atomic.Int64
	start := time.Now()
	for i := range sends {
		wg.Go(func() {
			t0 := time.Now()
			err := br.Send(ctx, Entry{Key: "ack:k", Score: 1, Member: fmt.Appendf(nil, "m%d", i)})
			assert.ErrorIs(t, err, ErrNotReplicated)
			took := int64(time.Since(t0))
			for old := worst.Load(); took > old && !worst.CompareAndSwap(old, took); old = worst.Load() {
			}
		})
		time.Sleep(10 * time.Millisecond)
	}
	span := time.Since(start)
	wg.Wait()
	info, err := rc.Info(ctx, "commandstats").Result()
	require.NoError(t, err)
	m := regexp.MustCompile(`cmdstat_wait:calls=(\d+)`).FindStringSubmatch(info)
	require.NotNil(t, m, "no WAIT ran")
	waits, _ := strconv.Atoi(m[1])
	t.Logf("%d Sends over %v shared %d WAITs; the slowest took %v", sends, span, waits, time.Duration(worst.Load()))
	assert.LessOrEqual(t, waits, int(span/timeout)+2, "WAITs queued behind one another")
	assert.Less(t, time.Duration(worst.Load()), span+8*timeout, "a Send waited for the WAITs queued before it")
}
