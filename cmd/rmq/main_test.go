package main

import (
	"testing"

	"github.com/rmq-go/rmq/internal/testenv"
)

// TestMain fails the package if any test leaves a goroutine behind: every
// command must end with the clients, servers and listeners it started gone.
func TestMain(m *testing.M) {
	testenv.VerifyTestMain(m)
}
