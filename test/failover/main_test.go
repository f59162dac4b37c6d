package failover_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/redislog"
	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if a test leaves a goroutine behind, and keeps
// go-redis from logging each failed dial to a killed master (thousands of
// lines a run; the report counts the failed Sends instead). The three
// Sentinel runs, which check no surviving master's rate, run at once after
// the Cluster runs, which do and so run one at a time (three at once kept
// 49-82 % of the survivors' rate where one alone keeps 93-113 %).
func TestMain(m *testing.M) {
	redislog.Install()
	testenv.ParallelWaiters(3)
	testenv.VerifyTestMain(m)
}
