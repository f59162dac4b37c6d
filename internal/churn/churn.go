// Package churn is the bookkeeping of the churn test (churn_test.go at the
// repository root): the log record each listener call of a worker process
// appends, reading the logs back, and the analyses run on them: overlapping
// owned calls of one slot, sent messages never processed, duplicate and
// not-owner counts, and how long each membership change took until every
// slot was served again.
//
// Times are wall-clock Unix nanoseconds: every worker runs on the same
// machine, so their clocks agree.
package churn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// Record is one line of a worker's log: one listener call, or a marker.
type Record struct {
	Slot    int    `json:"slot"`
	Key     string `json:"key,omitempty"`     // the message's slot basis
	Content string `json:"content,omitempty"` // the message content (unique per sent message)
	Start   int64  `json:"start"`             // Unix ns, when the listener began
	End     int64  `json:"end"`               // Unix ns, read before Owned
	Worker  string `json:"worker"`
	// Owned is what rmq.Owned(ctx) said after End was read. A call with
	// Owned false returned rmq.ErrNotOwner: its message was rolled back.
	Owned bool `json:"owned"`
	// Mark, when set, makes the record a marker of the worker's life
	// ("start", "stopping", "stopped"; Start is its time), not a call.
	Mark string `json:"mark,omitempty"`
}

// Marker names.
const (
	MarkStart    = "start"    // just before Client.Start
	MarkStopping = "stopping" // a stop was asked (SIGTERM or stdin EOF)
	MarkStopped  = "stopped"  // Close returned
)

// Writer appends records to a log file. Each record is one unbuffered
// write(2) on a file opened with O_APPEND, so a record the listener finished
// writing survives a SIGKILL right after, and threads never interleave.
type Writer struct{ f *os.File }

// Create opens (creating if needed) the log at path for appending.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends r as one JSON line in a single write.
func (w *Writer) Write(r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	n, err := w.f.Write(b)
	if err == nil && n != len(b) {
		err = io.ErrShortWrite
	}
	return err
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// Log is what a set of worker logs holds.
type Log struct {
	Calls []Record // listener calls, in file order
	Marks []Record // markers
	// Torn counts final lines without a newline: a write cut short by a
	// kill, or (while workers still run) a line being written.
	Torn int
}

// Parse reads the records of one log. A final line without a newline is
// skipped and counted as torn; any other unreadable line is an error.
func Parse(r io.Reader, name string) (Log, error) {
	var l Log
	br := bufio.NewReaderSize(r, 1<<16)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(line)) > 0 {
				l.Torn++
			}
			return l, nil
		}
		if err != nil {
			return l, fmt.Errorf("%s: %w", name, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(line, &rec); err != nil {
			return l, fmt.Errorf("%s:%d: %w: %q", name, lineNo, err, line)
		}
		if rec.Mark != "" {
			l.Marks = append(l.Marks, rec)
		} else {
			l.Calls = append(l.Calls, rec)
		}
	}
}

// ReadFiles reads and merges the logs at paths; a missing file counts as
// empty (a worker that died before its first record).
func ReadFiles(paths ...string) (Log, error) {
	var all Log
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return all, err
		}
		l, err := Parse(f, p)
		f.Close()
		if err != nil {
			return all, err
		}
		all.Calls = append(all.Calls, l.Calls...)
		all.Marks = append(all.Marks, l.Marks...)
		all.Torn += l.Torn
	}
	return all, nil
}

// Mark returns the time of the first marker name of worker, or 0.
func (l Log) Mark(worker, name string) int64 {
	for _, m := range l.Marks {
		if m.Worker == worker && m.Mark == name {
			return m.Start
		}
	}
	return 0
}

// Overlap is a pair of owned calls of one slot that overlap in time: Second
// started before First ended.
type Overlap struct {
	Slot          int
	First, Second Record
}

func (o Overlap) String() string {
	return fmt.Sprintf("slot %d: %s overlaps %s by %v", o.Slot, describe(o.First), describe(o.Second),
		time.Duration(o.First.End-o.Second.Start))
}

func describe(r Record) string {
	return fmt.Sprintf("{worker %s content %s start %s end %s owned %v}", r.Worker, r.Content,
		clock(r.Start), clock(r.End), r.Owned)
}

func clock(ns int64) string { return time.Unix(0, ns).Format("15:04:05.000000") }

// Overlaps returns every owned call that started before an earlier-starting
// owned call of the same slot had ended (the one ending last), by slot and
// start. Calls that were not owned at their end are ignored: the guarantee
// covers only calls that saw Owned true.
func Overlaps(calls []Record) []Overlap {
	var out []Overlap
	for slot, cs := range ownedBySlot(calls) {
		var prev *Record // the owned call, among those started so far, that ends last
		for i := range cs {
			c := &cs[i]
			if prev != nil && c.Start < prev.End {
				out = append(out, Overlap{Slot: slot, First: *prev, Second: *c})
			}
			if prev == nil || c.End > prev.End {
				prev = c
			}
		}
	}
	slices.SortFunc(out, func(a, b Overlap) int {
		if a.Slot != b.Slot {
			return a.Slot - b.Slot
		}
		return cmpInt64(a.Second.Start, b.Second.Start)
	})
	return out
}

// ownedBySlot groups owned calls by slot, each group sorted by start (then end).
func ownedBySlot(calls []Record) map[int][]Record {
	by := map[int][]Record{}
	for _, c := range calls {
		if c.Owned {
			by[c.Slot] = append(by[c.Slot], c)
		}
	}
	for _, cs := range by {
		slices.SortFunc(cs, func(a, b Record) int {
			if a.Start != b.Start {
				return cmpInt64(a.Start, b.Start)
			}
			return cmpInt64(a.End, b.End)
		})
	}
	return by
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Processed returns the set of contents with at least one owned call (the
// listener returned nil for it).
func Processed(calls []Record) map[string]int {
	done := map[string]int{}
	for _, c := range calls {
		if c.Owned {
			done[c.Content]++
		}
	}
	return done
}

// Missing returns the sent contents that no owned call processed, in sent order.
func Missing(sent []string, calls []Record) []string {
	done := Processed(calls)
	var out []string
	for _, s := range sent {
		if done[s] == 0 {
			out = append(out, s)
		}
	}
	return out
}

// Unexpected returns contents of calls that were never sent, sorted.
func Unexpected(sent []string, calls []Record) []string {
	known := make(map[string]bool, len(sent))
	for _, s := range sent {
		known[s] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range calls {
		if !known[c.Content] && !seen[c.Content] {
			seen[c.Content] = true
			out = append(out, c.Content)
		}
	}
	slices.Sort(out)
	return out
}

// Counts summarizes calls.
type Counts struct {
	Calls      int // listener calls
	Processed  int // calls owned at their end (committed)
	Distinct   int // distinct contents processed
	Duplicates int // Processed − Distinct: processed more than once
	NotOwned   int // calls that found themselves no longer owner (rolled back)
	PerWorker  map[string]WorkerCounts
}

// WorkerCounts are one worker's calls.
type WorkerCounts struct{ Calls, Processed, NotOwned int }

// Count computes the counts of calls.
func Count(calls []Record) Counts {
	c := Counts{Calls: len(calls), PerWorker: map[string]WorkerCounts{}}
	for _, r := range calls {
		w := c.PerWorker[r.Worker]
		w.Calls++
		if r.Owned {
			c.Processed++
			w.Processed++
		} else {
			c.NotOwned++
			w.NotOwned++
		}
		c.PerWorker[r.Worker] = w
	}
	c.Distinct = len(Processed(calls))
	c.Duplicates = c.Processed - c.Distinct
	return c
}

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
