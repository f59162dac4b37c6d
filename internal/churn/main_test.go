package churn

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// churn log's bookkeeping and the rebalance checks start none of their own.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
