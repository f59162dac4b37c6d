package coordinator_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq/coordinator"
)

// SetDeadline(d) ends ownership d from now. A very long d (the longest
// Duration, or Remaining() of a lease without a deadline, handed on) must
// leave the lease valid, not wrap the monotonic deadline around into the
// past; Valid and Remaining must agree.
func TestLeaseFarDeadlineStaysValid(t *testing.T) {
	for name, set := range map[string]func(l *coordinator.Lease, g *coordinator.Grant){
		"SetDeadline(MaxInt64)":       func(_ *coordinator.Lease, g *coordinator.Grant) { g.SetDeadline(math.MaxInt64) },
		"SetDeadline(Remaining())":    func(l *coordinator.Lease, g *coordinator.Grant) { g.SetDeadline(l.Remaining()) },
		"SetDeadlineAt(now+MaxInt64)": func(_ *coordinator.Lease, g *coordinator.Grant) { g.SetDeadlineAt(time.Now().Add(math.MaxInt64)) },
	} {
		t.Run(name, func(t *testing.T) {
			l, g := coordinator.NewLease("t", 0, 0, 0)
			set(l, g)
			assert.Positive(t, l.Remaining())
			assert.True(t, l.Valid(), "a deadline centuries away has passed: Remaining %v", l.Remaining())
		})
	}
}
