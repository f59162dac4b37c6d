// Package redislog is a go-redis logger that leaves out go-redis's line for
// each failed dial, for programs that report an unreachable server
// themselves: a client redials a lost server every second or so, and each
// attempt would otherwise log a line.
package redislog

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Install makes a DialQuiet that writes to standard error, each line
// prefixed "redis: ", go-redis's logger.
func Install() {
	redis.SetLogger(DialQuiet{L: log.New(os.Stderr, "redis: ", log.LstdFlags)})
}

// DialQuiet logs what go-redis says to L, but for failed dials. Install it
// with redis.SetLogger.
type DialQuiet struct {
	L *log.Logger
}

// Printf implements go-redis's logging interface.
func (q DialQuiet) Printf(_ context.Context, format string, v ...any) {
	s := fmt.Sprintf(format, v...)
	if strings.Contains(s, "failed to dial") {
		return
	}
	q.L.Print(s)
}
