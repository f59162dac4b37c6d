package keyslot_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// hash-slot arithmetic runs no goroutine of its own.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
