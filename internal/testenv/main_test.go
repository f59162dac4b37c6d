package testenv

import "testing"

// TestMain fails the package if any test leaves a goroutine behind: the
// servers, proxies and partitions a test starts must end with it.
func TestMain(m *testing.M) {
	VerifyTestMain(m)
}
