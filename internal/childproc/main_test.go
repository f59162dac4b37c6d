package childproc_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: each
// child's reaper must end once the child is gone.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
