package coordinator

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// coordinator's Run must end with its heartbeats, its listening for
// announcements and its passes gone.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
