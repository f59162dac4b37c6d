package flow_test

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
