package churn

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
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
