package testenv

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// Warnings is a slog.Handler that keeps the records at Warn and above (the
// message and its attributes, one line each), so a test can show that what
// it did is no incident to the library: hand it to rmq.WithLogger and
// assert that Logged is empty.
type Warnings struct {
	mu    sync.Mutex
	lines []string
}

// Enabled implements slog.Handler: Warn and above.
func (w *Warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

// Handle implements slog.Handler.
func (w *Warnings) Handle(_ context.Context, r slog.Record) error {
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += fmt.Sprintf(" %s=%v", a.Key, a.Value)
		return true
	})
	w.mu.Lock()
	w.lines = append(w.lines, line)
	w.mu.Unlock()
	return nil
}

// WithAttrs implements slog.Handler.
func (w *Warnings) WithAttrs([]slog.Attr) slog.Handler { return w }

// WithGroup implements slog.Handler.
func (w *Warnings) WithGroup(string) slog.Handler { return w }

// Logged returns the records kept so far.
func (w *Warnings) Logged() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.lines...)
}
