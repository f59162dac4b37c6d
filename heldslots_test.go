package rmq_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// A process holding many idle slots keeps no goroutine per slot (the Redis
// coordinator learns of a release through Grant.AfterRelease), so that tens
// of thousands of slots cost no stack each.
func TestHeldSlotsCostNoGoroutineEach(t *testing.T) {
	testenv.ForEach(t, func(t *testing.T, b testenv.Backend) {
		const slots = 1024
		c := newClient(t, b)
		define(t, c, "many", slots, rmq.FixedTime)
		require.NoError(t, c.Subscribe("many", newRecorder(), rmq.WithThreads(2)))
		before := runtime.NumGoroutine()
		run(t, c)
		require.Eventually(t, func() bool { return topicMetrics(c, "many").OwnedSlots == slots },
			30*time.Second, 10*time.Millisecond, "every slot held")
		time.Sleep(200 * time.Millisecond)
		grown := runtime.NumGoroutine() - before
		assert.Less(t, grown, slots/8, "goroutines added while holding %d slots", slots)
		t.Logf("goroutines added: %d for %d slots", grown, slots)
	})
}
