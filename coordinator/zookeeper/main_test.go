package zookeeper_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// Run and every client's Start must end with their goroutines gone. Four of
// its parallel tests, which wait on session timeouts and drains, run at once;
// those that measure the process's CPU or goroutines run alone.
func TestMain(m *testing.M) {
	testenv.ParallelWaiters(4)
	testenv.VerifyTestMain(m)
}
