package rmq_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// Start must end with its threads, wake-up listener and flushers gone. Four
// of its parallel tests, which wait on timers and servers, run at once.
func TestMain(m *testing.M) {
	testenv.ParallelWaiters(4)
	testenv.VerifyTestMain(m)
}
