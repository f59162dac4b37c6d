package rmq_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/rmq-go/rmq"
	"github.com/rmq-go/rmq/internal/testenv"
)

// NamespaceMetrics' doc: minutes "at least one, at most MaxMetricsMinutes,
// else ErrInvalidOption".
func TestNamespaceMetricsMinutesBelowOne(t *testing.T) {
	b := testenv.Mini(t)
	c := newClient(t, b)
	define(t, c, "t", 1, rmq.Priority)
	for _, n := range []int{0, -1} {
		_, _, err := c.NamespaceMetrics(context.Background(), "t", n)
		assert.ErrorIs(t, err, rmq.ErrInvalidOption, "minutes %d", n)
	}
}
