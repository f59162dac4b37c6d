package zookeeper_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// Run and every client's Start must end with their goroutines gone.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
