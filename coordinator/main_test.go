package coordinator

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// coordinator's Run must end with its heartbeats, its listening for
// announcements and its passes gone. Four of its parallel tests, which
// wait on leases and timers, run at once.
func TestMain(m *testing.M) {
	testenv.ParallelWaiters(4)
	testenv.VerifyTestMain(m)
}
