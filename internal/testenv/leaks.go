package testenv

import (
	"testing"

	"go.uber.org/goleak"
)

// VerifyTestMain runs a package's tests and fails the package if a test
// leaves a goroutine behind: every Start, Run, stream and subscription must
// end with its goroutines gone. go-redis's redial of a lost server is let
// be: it sleeps a second between attempts and notices a closed client only
// after its sleep.
func VerifyTestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
