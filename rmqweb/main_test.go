package rmqweb_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// dashboard's handlers and streams must end with their requests.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
