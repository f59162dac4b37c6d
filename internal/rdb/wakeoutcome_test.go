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

// The refusals of Redis 7 and 6 name the command as it was sent, in quotes
// or backquotes; only a server's reply (ours or go-redis's) counts.
func TestUnknownCommand(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{ReplyError("ERR unknown command 'spublish', with args beginning with: 'a' 'b' "), true},
		{ReplyError("ERR unknown command 'SPUBLISH', with args beginning with: "), true},
		{ReplyError("ERR unknown command `spublish`, with args beginning with: `a`, `b`, "), true},
		{fmt.Errorf("wrapped: %w", ReplyError("ERR unknown command 'spublish'")), true},
		{errors.New("ERR unknown command 'spublish'"), false}, // not a server's reply
		{ReplyError("ERR unknown command 'spublishx', with args beginning with: "), false},
		{ReplyError("ERR unknown command 'publish', with args beginning with: "), false},
		{ReplyError("NOPERM this user has no permissions to run the 'spublish' command"), false},
		{ReplyError("ERR unknown command ''"), false},
		{nil, false},
	} {
		assert.Equal(t, c.want, unknownCommand(c.err, "SPUBLISH"), "%v", c.err)
	}
}

// A refused SPUBLISH turns sharded wake-ups off for good, logged once, and
// still has the topic's wake-up published again; other failures leave them
// on.
func TestUnknownSPublishTurnsShardedWakeUpsOff(t *testing.T) {
	var out bytes.Buffer
	pub := &fakePublisher{}
	w := &wakeOutcome{log: slog.New(slog.NewTextHandler(&out, nil))}
	w.retry = newWakeRetry(pub.publish, w.Complete)
	defer w.retry.close()

	w.failedOn("ns:wake:a", ReplyError("NOPERM this user has no permissions to run the 'spublish' command"))
	assert.True(t, w.sharded(), "a refusal for another reason")
	refused := redis.NewIntCmd(context.Background(), "spublish", "ch", "x")
	refused.SetErr(ReplyError("ERR unknown command 'spublish', with args beginning with: 'ch' 'x' "))
	w.failedOn("ns:wake:a", refused.Err())
	w.failedOn("ns:wake:b", refused.Err())
	assert.False(t, w.sharded())
	assert.Equal(t, 1, strings.Count(out.String(), "no sharded pub/sub"), out.String())
	require.Eventually(t, func() bool {
		got, _, _ := pub.snapshot()
		return len(got) == 2
	}, 2*time.Second, 10*time.Millisecond, "both topics' wake-ups published again")
	var none *wakeOutcome
	assert.True(t, none.sharded(), "a broker without an outcome (tests) keeps them on")
}
