package rdb

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine behind, such as a
// send stream's reader after Close. Four of its parallel tests, which wait
// on timers and servers, run at once.
func TestMain(m *testing.M) {
	testenv.ParallelWaiters(4)
	testenv.VerifyTestMain(m)
}
