package alarm

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: a
// goroutine put to sleep on an alarm must be woken or stopped, never left
// parked.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
