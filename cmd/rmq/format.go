package main

import (
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// printer writes rmq's output to an io.Writer. It is safe for concurrent use,
// so the demo's listeners print from their own goroutines, one whole line at
// a time.
type printer struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time // the origin of event lines' relative timestamps
}

// newPrinter returns a printer on w whose clock starts now.
func newPrinter(w io.Writer) *printer { return &printer{w: w, start: time.Now()} }

// printf writes formatted text.
func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// event writes one line stamped with the time since the printer's start:
// "+1.203s  what      topic  details".
func (p *printer) event(what, topic, format string, args ...any) {
	line := fmt.Sprintf("%8s  %-6s %-15s %s\n", p.elapsed(time.Now()), what, topic, fmt.Sprintf(format, args...))
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.w, line)
}

// elapsed formats t relative to the printer's start, e.g. "+1.203s".
func (p *printer) elapsed(t time.Time) string {
	return fmt.Sprintf("%+.3fs", t.Sub(p.start).Seconds())
}

// table writes rows under header (none if nil), in aligned columns.
func (p *printer) table(header []string, rows [][]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	if header != nil {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// formatContent prints a message content safely: a Go-quoted string when it
// is printable UTF-8 (tabs and line breaks allowed, escaped), else "hex:" and
// its bytes in hex.
func formatContent(b []byte) string {
	if utf8.Valid(b) && isPrintable(string(b)) {
		return strconv.Quote(string(b))
	}
	return "hex:" + hex.EncodeToString(b)
}

// parseContent reads a content as formatContent prints it (requeue
// -printed), so that a binary dead message can be requeued by what
// "rmq dead" showed; anything else is bad usage.
func parseContent(s string) ([]byte, error) {
	if h, ok := strings.CutPrefix(s, "hex:"); ok {
		b, err := hex.DecodeString(h)
		if err != nil || len(b) == 0 {
			return nil, usagef("content %q: hex: must be followed by hex digits", s)
		}
		return b, nil
	}
	if q, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		return []byte(q), nil
	}
	return nil, usagef("content %q is neither a quoted string nor hex:… (as \"rmq dead\" prints them)", s)
}

// isPrintable reports whether every rune of s is printable, a space, a tab
// or a line break.
func isPrintable(s string) bool {
	for _, r := range s {
		if !strconv.IsPrint(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}

// formatTime prints a wall-clock time to the millisecond, in local time.
func formatTime(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05.000") }

// clock prints the time of day to the millisecond, in local time.
func clock(t time.Time) string { return t.Local().Format("15:04:05.000") }

// itoa formats an int64.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// plural returns "1 message" or "n messages".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return itoa(n) + " " + noun + "s"
}

// joinInts formats numbers as "1, 2, 3".
func joinInts(ns []int64) string {
	s := ""
	for i, n := range ns {
		if i > 0 {
			s += ", "
		}
		s += itoa(n)
	}
	return s
}

// millis formats d in milliseconds with one decimal, e.g. "1.3 ms".
func millis(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
