package redislog

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: the
// go-redis logger starts none of its own.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
