package rmqweb

import (
	"fmt"
	"math"
)

// The pages draw their charts as inline SVG, server-side: geometry is
// computed here, and the templates write it out with html/template, which
// escapes every value in its context (titles as text, links as URLs).

// barChart is a small SVG bar chart, one bar per minute.
type barChart struct {
	Width, Height int
	Base          int // the baseline's y, under the bars
	Bars          []chartBar
	Top           string // the value the full height stands for
}

// chartBar is one bar; Title is its tooltip.
type chartBar struct {
	X, Y, W, H int
	Title      string
}

// Chart sizes in pixels.
const (
	chartBarWidth = 8
	chartGap      = 2
	chartHeight   = 32
)

// newBarChart draws values (oldest first) scaled to the largest; titles
// label them.
func newBarChart(values []float64, titles []string, top string) barChart {
	c := barChart{Width: len(values) * (chartBarWidth + chartGap), Height: chartHeight + 1, Base: chartHeight, Top: top}
	peak := 0.0
	for _, v := range values {
		peak = math.Max(peak, v)
	}
	for i, v := range values {
		h := 0
		if peak > 0 {
			h = int(math.Round(v / peak * chartHeight))
		}
		if v > 0 && h == 0 {
			h = 1 // something happened: show it
		}
		c.Bars = append(c.Bars, chartBar{X: i * (chartBarWidth + chartGap), Y: chartHeight - h, W: chartBarWidth, H: h, Title: titles[i]})
	}
	return c
}

// heatStrip is a grid of cells, one per slot (or per group of slots on
// large topics), coloured by backlog, so a hot key's slot stands out.
type heatStrip struct {
	Width, Height int
	Cells         []heatCell
}

// heatCell is one cell; Slot is the slot it links to (the hottest of its
// group) and Title its tooltip.
type heatCell struct {
	X, Y, Size int
	Fill       string
	Slot       int
	Title      string
}

// Heat strip layout.
const (
	heatMaxCells = 1024 // larger topics group slots into this many cells
	heatPerRow   = 64
	heatCellSize = 14
	heatGap      = 1
)

// heatPalette goes from cold to hot; an empty cell is heatEmpty.
var heatPalette = []string{"#fff5eb", "#fee6ce", "#fdd0a2", "#fdae6b", "#fd8d3c", "#f16913", "#d94801", "#a63603", "#7f2704"}

const heatEmpty = "#eef0f2"

// newHeatStrip draws waiting (per slot) on a logarithmic colour scale.
func newHeatStrip(waiting []int64) heatStrip {
	n := len(waiting)
	per := 1
	if n > heatMaxCells {
		per = n / heatMaxCells // slot amounts are powers of two: exact
	}
	cells := n / per
	type group struct {
		sum      int64
		hot      int
		from, to int
	}
	groups := make([]group, cells)
	var peak int64
	for i := range groups {
		g := group{from: i * per, to: i*per + per - 1, hot: i * per}
		for s := g.from; s <= g.to; s++ {
			g.sum += waiting[s]
			if waiting[s] > waiting[g.hot] {
				g.hot = s
			}
		}
		groups[i] = g
		peak = max(peak, g.sum)
	}
	rows := (cells + heatPerRow - 1) / heatPerRow
	step := heatCellSize + heatGap
	h := heatStrip{Width: min(cells, heatPerRow) * step, Height: rows * step}
	for i, g := range groups {
		c := heatCell{X: i % heatPerRow * step, Y: i / heatPerRow * step, Size: heatCellSize, Fill: heatColor(g.sum, peak), Slot: g.hot}
		if per == 1 {
			c.Title = fmt.Sprintf("slot %d: %s waiting", g.from, count(g.sum))
		} else {
			c.Title = fmt.Sprintf("slots %d–%d: %s waiting (most in slot %d)", g.from, g.to, count(g.sum), g.hot)
		}
		h.Cells = append(h.Cells, c)
	}
	return h
}

// heatColor maps v in [0, peak] to the palette on a log scale.
func heatColor(v, peak int64) string {
	if v <= 0 || peak <= 0 {
		return heatEmpty
	}
	level := math.Log1p(float64(v)) / math.Log1p(float64(peak))
	i := int(math.Round(level * float64(len(heatPalette)-1)))
	return heatPalette[min(max(i, 0), len(heatPalette)-1)]
}
