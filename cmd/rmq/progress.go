package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rmq-go/rmq"
)

// progressEvery is how often a progress line is rewritten at most.
const progressEvery = 100 * time.Millisecond

// progressLine shows how far a long dead-set action got, as one line of
// stderr rewritten in place, when stderr is a terminal; elsewhere (a pipe, a
// log file) it prints nothing, and the summary on stdout says what was done.
type progressLine struct {
	w     io.Writer // nil: not a terminal
	verb  string    // "requeued", "purged"
	start time.Time
	last  time.Time
	shown bool
}

// isTerminal reports whether w is a terminal (a character device); tests
// replace it.
var isTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// newProgressLine returns the progress line of an action on stderr.
func newProgressLine(stderr io.Writer, verb string) *progressLine {
	p := &progressLine{verb: verb, start: time.Now()}
	if isTerminal(stderr) {
		p.w = stderr
	}
	return p
}

// update shows dp, at most every progressEvery (and always the last step).
func (p *progressLine) update(dp rmq.DeadProgress) {
	if p.w == nil {
		return
	}
	now := time.Now()
	if p.shown && now.Sub(p.last) < progressEvery && dp.Done < dp.Total {
		return
	}
	p.last, p.shown = now, true
	pct := 100.0
	if dp.Total > 0 {
		pct = min(100*float64(dp.Done)/float64(dp.Total), 100)
	}
	// \r back to the line's start, \x1b[K erase what a longer line left
	fmt.Fprintf(p.w, "\r\x1b[K%s %s of %s dead messages of topic %s (%.0f%%), slot %d of %d, %s",
		p.verb, itoa(dp.Done), itoa(dp.Total), dp.Topic, pct, dp.Slot+1, dp.Slots, time.Since(p.start).Round(100*time.Millisecond))
}

// finish erases the progress line, so the summary stands alone.
func (p *progressLine) finish() {
	if p.w != nil && p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}
