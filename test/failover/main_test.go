package failover_test

import (
	"log"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/rmq-go/rmq/internal/redislog"
)

// TestMain fails the package if a test leaves a goroutine behind, and keeps
// go-redis from logging each failed dial to a killed master (thousands of
// lines a run; the report counts the failed Sends instead).
func TestMain(m *testing.M) {
	redis.SetLogger(redislog.DialQuiet{L: log.New(os.Stderr, "redis: ", log.LstdFlags)})
	// go-redis redials a lost server from a goroutine that sleeps a second
	// between attempts and notices a closed client only after its sleep.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
