// Package reshard_test moves hash slots between the masters of a private
// Redis Cluster while RMQ sends and consumes: the way a Cluster grows. Each
// test starts a Cluster of its own, so the tests run side by side
// (t.Parallel; four at once, testenv.ParallelWaiters).
package reshard_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/redislog"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine behind (go-redis's
// redial of a lost connection aside, which notices a closed client only
// after its sleep) and keeps go-redis's failed-dial lines out of the log.
func TestMain(m *testing.M) {
	redislog.Install()
	testenv.ParallelWaiters(4)
	testenv.VerifyTestMain(m)
}
