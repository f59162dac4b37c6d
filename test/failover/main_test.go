package failover_test

import (
	"log"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/internal/redislog"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine behind, and keeps
// go-redis from logging each failed dial to a killed master (thousands of
// lines a run; the report counts the failed Sends instead).
func TestMain(m *testing.M) {
	redis.SetLogger(redislog.DialQuiet{L: log.New(os.Stderr, "redis: ", log.LstdFlags)})
	testenv.VerifyTestMain(m)
}
