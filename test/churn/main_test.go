package churn_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package, in the parent and in every worker process, if
// a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
