package rmq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCeilMs(t *testing.T) {
	cases := []struct {
		name string
		t    time.Time
		want int64
	}{
		{"on the millisecond", time.UnixMilli(1795300000123), 1795300000123},
		{"a nanosecond after", time.UnixMilli(1795300000123).Add(time.Nanosecond), 1795300000124},
		{"before 1970", time.UnixMilli(-5).Add(-time.Nanosecond), -5},
		{"after 2262", time.Date(2300, 1, 1, 0, 0, 0, 1, time.UTC), time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() + 1},
		{"at maxDueMs", time.UnixMilli(maxDueMs), maxDueMs},
		{"past maxDueMs", time.UnixMilli(maxDueMs).Add(time.Nanosecond), maxDueMs + 1},
		{"past int64 milliseconds", time.Date(300_000_000, 1, 1, 0, 0, 0, 0, time.UTC), maxDueMs + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, ceilMs(tc.t))
		})
	}
}

// A RangeMergeMessage sent when now plus its TimeRange is after 2262 is due
// then, not at a time wrapped around.
func TestRangeMergeDueAfter2262(t *testing.T) {
	now := time.Date(2250, 1, 1, 0, 0, 0, 0, time.UTC)
	o, err := RangeMergeMessage{Topic: "t", Content: []byte("x"), TimeRange: 50 * 365 * 24 * time.Hour}.prepare(now)
	require.NoError(t, err)
	assert.Equal(t, now.Add(50*365*24*time.Hour).UnixMilli(), o.dueMs)
}
