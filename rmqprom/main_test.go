package rmqprom_test

import (
	"os"
	"testing"
)

// TestMain deletes what the scrape benchmark filled once every test and
// benchmark has run.
func TestMain(m *testing.M) {
	code := m.Run()
	deleteScrapeFixture()
	os.Exit(code)
}
