package backoff

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestExponential(t *testing.T) {
	e := Exponential{Base: 100 * time.Millisecond, Max: time.Second}
	for _, c := range []struct {
		n    int
		want time.Duration
	}{{0, 100 * time.Millisecond}, {1, 100 * time.Millisecond}, {2, 200 * time.Millisecond},
		{4, 800 * time.Millisecond}, {5, time.Second}, {100, time.Second}} {
		assert.Equal(t, c.want, e.Delay(c.n), "attempt %d", c.n)
	}
	assert.Zero(t, Exponential{}.Delay(3))
	assert.Equal(t, time.Second, Exponential{Base: time.Second, Max: 0}.Delay(5), "Max below Base is Base")
}

func TestExponentialJitterStaysInTheUpperHalf(t *testing.T) {
	e := Exponential{Base: 100 * time.Millisecond, Max: 400 * time.Millisecond, Jitter: true}
	for range 1000 {
		d := e.Delay(3)
		assert.GreaterOrEqual(t, d, 200*time.Millisecond)
		assert.LessOrEqual(t, d, 400*time.Millisecond)
	}
}
