package crash_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package, in the parent and in every worker process, if
// a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	// go-redis redials a lost server from a goroutine that sleeps a second
	// between attempts and notices a closed client only after its sleep.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
