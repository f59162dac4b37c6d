package failover_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind, and keeps
// go-redis from logging each failed dial to a killed master (thousands of
// lines a run; the report counts the failed Sends instead).
func TestMain(m *testing.M) {
	redis.SetLogger(dialQuietLogger{log.New(os.Stderr, "redis: ", log.LstdFlags)})
	// go-redis redials a lost server from a goroutine that sleeps a second
	// between attempts and notices a closed client only after its sleep.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// dialQuietLogger is go-redis's logger without its failed-dial lines.
type dialQuietLogger struct{ l *log.Logger }

// Printf logs what go-redis says, but for failed dials.
func (q dialQuietLogger) Printf(_ context.Context, format string, v ...any) {
	s := fmt.Sprintf(format, v...)
	if strings.Contains(s, "failed to dial") {
		return
	}
	q.l.Print(s)
}
