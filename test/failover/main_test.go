package failover_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/redislog"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine behind, and keeps
// go-redis from logging each failed dial to a killed master (thousands of
// lines a run; the report counts the failed Sends instead).
func TestMain(m *testing.M) {
	redislog.Install()
	testenv.VerifyTestMain(m)
}
