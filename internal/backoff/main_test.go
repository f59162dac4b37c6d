package backoff

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: a
// pause between attempts must end with its ctx or its time.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
