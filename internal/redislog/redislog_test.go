package redislog

import (
	"bytes"
	"context"
	"log"
	"testing"
)

func TestDialQuietDropsFailedDialsOnly(t *testing.T) {
	var buf bytes.Buffer
	q := DialQuiet{L: log.New(&buf, "", 0)}
	ctx := context.Background()
	q.Printf(ctx, "redis: connection pool: failed to dial after %d attempts: %v", 5, "connection refused")
	if buf.Len() != 0 {
		t.Fatalf("a failed dial was logged: %q", buf.String())
	}
	q.Printf(ctx, "redis: discarding bad PubSub connection: %v", "EOF")
	if got, want := buf.String(), "redis: discarding bad PubSub connection: EOF\n"; got != want {
		t.Fatalf("logged %q, want %q", got, want)
	}
}
