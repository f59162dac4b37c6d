// Package reshard_test moves hash slots between the masters of a private
// Redis Cluster while RMQ sends and consumes: the way a Cluster grows.
package reshard_test

import (
	"log"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/rmq-go/rmq/internal/redislog"
)

// TestMain fails the package if a test leaves a goroutine behind (go-redis's
// redial of a lost connection aside, which notices a closed client only
// after its sleep) and keeps go-redis's failed-dial lines out of the log.
func TestMain(m *testing.M) {
	redis.SetLogger(redislog.DialQuiet{L: log.New(os.Stderr, "redis: ", log.LstdFlags)})
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
