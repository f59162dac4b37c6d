package rdb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The refusals of the command itself by Redis 7 and 6 and by an ACL (7.0's
// and 7.2's words) name it as it was sent, in quotes or backquotes; only a
// server's reply (ours or go-redis's) counts, and an ACL's refusal of a
// channel is not one.
func TestRefusedCommand(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{ReplyError("ERR unknown command 'spublish', with args beginning with: 'a' 'b' "), true},
		{ReplyError("ERR unknown command 'SPUBLISH', with args beginning with: "), true},
		{ReplyError("ERR unknown command `spublish`, with args beginning with: `a`, `b`, "), true},
		{fmt.Errorf("wrapped: %w", ReplyError("ERR unknown command 'spublish'")), true},
		{ReplyError("NOPERM this user has no permissions to run the 'spublish' command"), true},
		{ReplyError("NOPERM User ops has no permissions to run the 'spublish' command"), true},
		{errors.New("ERR unknown command 'spublish'"), false}, // not a server's reply
		{ReplyError("ERR unknown command 'spublishx', with args beginning with: "), false},
		{ReplyError("ERR unknown command 'publish', with args beginning with: "), false},
		{ReplyError("NOPERM this user has no permissions to run the 'publish' command"), false},
		{ReplyError("NOPERM this user has no permissions to access one of the channels used as arguments"), false},
		{ReplyError("ERR unknown command ''"), false},
		{nil, false},
	} {
		assert.Equal(t, c.want, refusedCommand(c.err, "SPUBLISH"), "%v", c.err)
	}
	assert.True(t, noPermission(ReplyError("NOPERM this user has no permissions to access one of the channels used as arguments")))
	assert.False(t, noPermission(ReplyError("ERR unknown command 'ssubscribe'")))
}

// A refused SPUBLISH turns sharded wake-ups off for shardRetry, logged the
// first time only, and still has the topic's wake-up published again, at
// once; other failures (an ACL's refusal of the channel) leave them on.
func TestRefusedSPublishTurnsShardedWakeUpsOff(t *testing.T) {
	var out bytes.Buffer
	pub := &fakePublisher{}
	w := &wakeOutcome{log: slog.New(slog.NewTextHandler(&out, nil)), shardRetry: 300 * time.Millisecond}
	w.retry = newWakeRetry(pub.publish, w.Complete)
	defer w.retry.close()

	w.failedOn("ns:wake:a", []byte("3:0"), ReplyError("NOPERM this user has no permissions to access one of the channels used as arguments"))
	assert.True(t, w.sharded(), "a refusal for another reason")
	refused := redis.NewIntCmd(context.Background(), "spublish", "ch", "x")
	refused.SetErr(ReplyError("ERR unknown command 'spublish', with args beginning with: 'ch' 'x' "))
	turned := time.Now()
	w.failedOn("ns:wake:a", []byte("3:0"), refused.Err())
	w.failedOn("ns:wake:b", []byte("3:0"), refused.Err())
	assert.False(t, w.sharded())
	assert.Equal(t, 1, strings.Count(out.String(), "refuses sharded pub/sub"), out.String())
	require.Eventually(t, func() bool {
		got, _, _ := pub.snapshot()
		return len(got) == 2
	}, 2*time.Second, time.Millisecond, "both topics' wake-ups published again")
	_, at, _ := pub.snapshot()
	assert.Less(t, at[1].Sub(turned), wakeRetryAfter/2, "at once")
	require.Eventually(t, w.sharded, 5*time.Second, 10*time.Millisecond, "SPUBLISH tried again")
	assert.GreaterOrEqual(t, time.Since(turned), w.shardRetry)
	w.failedOn("ns:wake:a", []byte("3:0"), refused.Err())
	assert.False(t, w.sharded(), "refused again")
	assert.Equal(t, 1, strings.Count(out.String(), "refuses sharded pub/sub"), "logged once: %s", out.String())
	var none *wakeOutcome
	assert.True(t, none.sharded(), "a broker without an outcome (tests) keeps them on")
}

// A sharded wake-up answered MOVED (its slot moved after its entries were
// stored) is published again at once, and not logged as a failure.
func TestMovedWakeUpIsPublishedAgainAtOnce(t *testing.T) {
	var out bytes.Buffer
	pub := &fakePublisher{}
	w := &wakeOutcome{log: slog.New(slog.NewTextHandler(&out, nil))}
	w.retry = newWakeRetry(pub.publish, w.Complete)
	defer w.retry.close()
	start := time.Now()
	w.failedOn("ns:wake:a", []byte("3:0"), ReplyError("MOVED 8128 127.0.0.1:7001"))
	require.Eventually(t, func() bool {
		got, _, _ := pub.snapshot()
		return len(got) == 1
	}, 2*time.Second, time.Millisecond)
	_, at, _ := pub.snapshot()
	assert.Less(t, at[0].Sub(start), wakeRetryAfter/2)
	assert.True(t, w.sharded())
	assert.Empty(t, out.String())
	w.failedOn("ns:wake:a", []byte("3:0"), ReplyError("ERR connection reset")) // a failure still is
	assert.Contains(t, out.String(), "wake-up publish failed")
}

// A wake-up answered CLUSTERDOWN (a node reset as it leaves the Cluster) is
// not logged, and goes again after the delay; a failure of that is logged.
func TestClusterDownWakeUpIsPublishedAgainQuietly(t *testing.T) {
	var out bytes.Buffer
	pub := &fakePublisher{failures: 1}
	w := &wakeOutcome{log: slog.New(slog.NewTextHandler(&out, nil))}
	w.retry = newWakeRetry(pub.publish, w.Complete)
	defer w.retry.close()
	start := time.Now()
	w.failedOn("ns:wake:a", []byte("5:0"), ReplyError("CLUSTERDOWN Hash slot not served"))
	assert.Empty(t, out.String(), "not logged")
	require.Eventually(t, func() bool {
		got, _, _ := pub.snapshot()
		return len(got) == 2
	}, 5*time.Second, time.Millisecond, "published again, and again after that failed")
	_, at, _ := pub.snapshot()
	assert.GreaterOrEqual(t, at[0].Sub(start), wakeRetryAfter, "after the delay")
	assert.Contains(t, out.String(), "wake-up publish failed", "the retry's failure is logged")
	pub.mu.Lock()
	assert.Equal(t, []string{"5:0", "5:0"}, pub.payloads)
	pub.mu.Unlock()
}
