package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Formatting of figures and markdown tables.

// stat formats "median (min–max)" of xs with f, or "—" when empty.
func stat(xs []float64, f func(float64) string) string {
	if len(xs) == 0 {
		return "—"
	}
	if len(xs) == 1 {
		return f(xs[0])
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	return fmt.Sprintf("%s (%s–%s)", f(median(xs)), f(lo), f(hi))
}

// num formats a number for humans: thousands separators for large values,
// three significant digits for small ones.
func num(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.Abs(v) >= 1000:
		return thousands(int64(math.Round(v)))
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	case v == 0:
		return "0"
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func ms(v float64) string     { return num(v) + " ms" }
func ratio(v float64) string  { return fmt.Sprintf("%.2f×", v) }
func pct(v float64) string    { return fmt.Sprintf("%.0f%%", v*100) }
func cpuSec(v float64) string { return fmt.Sprintf("%.2f s", v) }

// count formats a total of events.
func count(v float64) string { return thousands(int64(math.Round(v))) }

// perRoundCells formats one value per round and their median.
func perRoundCells(xs []float64, f func(float64) string) []string {
	var cells []string
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			cells = append(cells, "—")
		} else {
			cells = append(cells, f(x))
		}
	}
	return append(cells, "**"+f(median(xs))+"**")
}

// table is a markdown table.
type table struct {
	head []string
	rows [][]string
}

func newTable(head ...string) *table { return &table{head: head} }
func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	line := func(cells []string) {
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	line(t.head)
	sep := make([]string, len(t.head))
	for i := range sep {
		sep[i] = "---"
		if i > 0 && t.numeric(i) {
			sep[i] = "---:"
		}
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	fmt.Fprintln(w)
}

// numeric reports whether every cell of column i reads as a figure, so it
// is right-aligned; text columns stay left-aligned.
func (t *table) numeric(i int) bool {
	for _, r := range t.rows {
		if i >= len(r) || r[i] == "" {
			continue
		}
		if !strings.ContainsRune("0123456789-—*", []rune(r[i])[0]) {
			return false
		}
	}
	return true
}

// roundHead returns "what", "round 1", …, "median".
func roundHead(what string, rounds int) []string {
	h := []string{what}
	for i := 1; i <= rounds; i++ {
		h = append(h, fmt.Sprintf("round %d", i))
	}
	return append(h, "median")
}
