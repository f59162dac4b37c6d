package rmqweb

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestPrintableEscapesAndTruncates(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"plain", []byte("order:9"), `"order:9"`},
		{"markup stays text", []byte(`<b>"x"</b>`), `"<b>\"x\"</b>"`},
		{"control bytes", []byte("a\x00b\n\x1b"), `"a\x00b\n\x1b"`},
		{"invalid utf-8", []byte{0xff, 0xfe, 'a'}, `"\xff\xfea"`},
		{"unicode", []byte("prix €5"), `"prix €5"`},
		{"long", []byte(strings.Repeat("x", 200)), `"` + strings.Repeat("x", 120) + `"… (200 bytes)`},
		{"cut at a rune boundary", []byte(strings.Repeat("x", 119) + "€€"), `"` + strings.Repeat("x", 119) + `"… (125 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, printable(tc.in)) })
	}
}

func TestHumanFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Microsecond: "850µs", 12300 * time.Microsecond: "12.3ms", 4200 * time.Millisecond: "4.2s",
		200 * time.Second: "3m20s", 5*time.Hour + 3*time.Minute: "5h03m", 52 * time.Hour: "2d04h", -2 * time.Second: "2.0s",
	} {
		assert.Equal(t, want, humanDuration(d), d.String())
	}
	now := time.Now()
	assert.Equal(t, "in 3.0s", relative(now.Add(3*time.Second), now))
	assert.Equal(t, "4m02s ago", relative(now.Add(-242*time.Second), now))
	assert.Equal(t, "now", relative(now, now))
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 12345678: "12,345,678", -4500: "-4,500"} {
		assert.Equal(t, want, count(n))
	}
	for r, want := range map[float64]string{0: "0", 0.25: "0.25", 12.5: "12.5", 1234.4: "1,234"} {
		assert.Equal(t, want, rate(r))
	}
	assert.Equal(t, "—", clockTime(time.Time{}))
	assert.Equal(t, "2024-05-01 10:00:00.250Z", clockTime(time.Date(2024, 5, 1, 10, 0, 0, 250e6, time.UTC)))
}

func TestHeatStripMarksTheHotSlot(t *testing.T) {
	waiting := make([]int64, 8)
	waiting[5] = 10_000
	waiting[2] = 3
	h := newHeatStrip(waiting)
	assert.Len(t, h.Cells, 8)
	assert.Equal(t, heatPalette[len(heatPalette)-1], h.Cells[5].Fill, "the hottest slot has the hottest colour")
	assert.Equal(t, heatEmpty, h.Cells[0].Fill)
	assert.NotEqual(t, heatEmpty, h.Cells[2].Fill)
	assert.NotEqual(t, h.Cells[5].Fill, h.Cells[2].Fill)
	assert.Equal(t, "slot 5: 10,000 waiting", h.Cells[5].Title)
	assert.Equal(t, 8*(heatCellSize+heatGap), h.Width)
	assert.Equal(t, heatCellSize+heatGap, h.Height)
}

func TestHeatStripGroupsLargeTopics(t *testing.T) {
	waiting := make([]int64, 1<<16)
	waiting[40_010] = 7
	h := newHeatStrip(waiting)
	assert.Len(t, h.Cells, heatMaxCells)
	hot := h.Cells[40_010/64]
	assert.Equal(t, 40_010, hot.Slot, "a group links to its hottest slot")
	assert.Equal(t, "slots 40000–40063: 7 waiting (most in slot 40010)", hot.Title)
	assert.Equal(t, heatPerRow*(heatCellSize+heatGap), h.Width)
	assert.Equal(t, heatMaxCells/heatPerRow*(heatCellSize+heatGap), h.Height)
	assert.Equal(t, hot.Y, 40_010/64/heatPerRow*(heatCellSize+heatGap))
}

func TestBarChartScalesToThePeak(t *testing.T) {
	c := newBarChart([]float64{0, 0.01, 5, 10}, []string{"a", "b", "c", "d"}, "10/s")
	assert.Equal(t, []int{0, 1, 16, 32}, []int{c.Bars[0].H, c.Bars[1].H, c.Bars[2].H, c.Bars[3].H}, "a tiny rate still shows")
	for _, b := range c.Bars {
		assert.Equal(t, chartHeight, b.Y+b.H, "bars stand on the baseline")
	}
	assert.Equal(t, 4*(chartBarWidth+chartGap), c.Width)
}
