package churn

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Event is a change of membership (or of the ensemble) at a moment.
type Event struct {
	Name string
	At   int64 // Unix ns
}

// Rebalance is how long it took after an event until every slot was served.
type Rebalance struct {
	Event     Event
	WindowEnd int64 // the next event or the end of the feed: later calls are not looked at
	// AllServed is the time from the event until every slot had an owned
	// call that started at or after the event (−1: some slot had none in
	// the window). LastSlot is the slot that took longest.
	AllServed time.Duration
	LastSlot  int
	// Settled is the time from the event until every slot was served by the
	// worker that serves it at the end of the window: per slot, the start
	// of the last unbroken run of owned calls by one worker. It differs
	// from AllServed when slots move after the event (a join, or a stop
	// that first lets the old owner finish).
	Settled     time.Duration
	SettledSlot int
	// Moved counts slots whose worker at the end of the window differs
	// from their last worker before the event.
	Moved int
	// Unserved lists slots without any owned call in the window.
	Unserved []int
}

// Measure computes the rebalance after ev from the calls, looking at owned
// calls that start in [ev.At, windowEnd).
func Measure(calls []Record, slots int, ev Event, windowEnd int64) Rebalance {
	r := Rebalance{Event: ev, WindowEnd: windowEnd, LastSlot: -1, SettledSlot: -1}
	by := ownedBySlot(calls)
	var allServed, settled int64 = -1, -1
	for slot := range slots {
		cs := by[slot]
		before := ""
		var in []Record
		for _, c := range cs {
			switch {
			case c.Start < ev.At:
				before = c.Worker // sorted by start: the last one wins
			case c.Start < windowEnd:
				in = append(in, c)
			}
		}
		if len(in) == 0 {
			r.Unserved = append(r.Unserved, slot)
			continue
		}
		if first := in[0].Start - ev.At; first > allServed {
			allServed, r.LastSlot = first, slot
		}
		final := in[len(in)-1].Worker
		runStart := len(in) - 1
		for runStart > 0 && in[runStart-1].Worker == final {
			runStart--
		}
		if s := in[runStart].Start - ev.At; s > settled {
			settled, r.SettledSlot = s, slot
		}
		if final != before {
			r.Moved++
		}
	}
	r.AllServed, r.Settled = time.Duration(allServed), time.Duration(settled)
	if len(r.Unserved) > 0 {
		r.AllServed, r.Settled = -1, -1
	}
	return r
}

// Gap is the longest time one slot went without an owned call starting.
type Gap struct {
	Slot     int
	From, To int64 // Unix ns
}

// Len returns the gap's length.
func (g Gap) Len() time.Duration { return time.Duration(g.To - g.From) }

// Gaps returns, for each slot, its longest interval in [from, to] without an
// owned call starting, longest first.
func Gaps(calls []Record, slots int, from, to int64) []Gap {
	by := ownedBySlot(calls)
	out := make([]Gap, 0, slots)
	for slot := range slots {
		g := Gap{Slot: slot, From: from, To: from}
		last := from
		for _, c := range by[slot] {
			if c.Start < from || c.Start > to {
				continue
			}
			if c.Start-last > g.To-g.From {
				g.From, g.To = last, c.Start
			}
			last = c.Start
		}
		if to-last > g.To-g.From {
			g.From, g.To = last, to
		}
		out = append(out, g)
	}
	slices.SortStableFunc(out, func(a, b Gap) int { return cmpInt64(b.To-b.From, a.To-a.From) })
	return out
}

// FormatDuration prints d in seconds with millisecond precision, or "never"
// for a negative d (not within the window).
func FormatDuration(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// Table formats rows as an aligned text table; the first row is the header.
func Table(rows [][]string) string {
	widths := map[int]int{}
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	var b strings.Builder
	for _, row := range rows {
		for i, cell := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(cell)
			if i < len(row)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(cell))))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
