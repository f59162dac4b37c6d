package rdb

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine behind, such as a
// send stream's reader after Close.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
