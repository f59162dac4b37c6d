package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// tally is what the listeners saw.
type tally struct {
	mu          sync.Mutex
	changed     chan struct{}  // closed and replaced at every change
	renders     map[string]int // deliveries per render content
	busy        bool           // the warm-up job is running
	jobsSent    bool           // the other jobs are stored: the warm-up job may end
	priorities  []int64        // priorities of the other jobs, in delivery order
	reminderDue time.Time      // the FixedTime the reminder was sent with
	late        time.Duration  // how late the reminder came, by the local clock
	reminded    bool
	flakyDone   bool // the flaky render succeeded
	poisonLast  bool // the poison render failed with no retries left
	ended       bool // the scenario ended (done, failed or cut short): nothing more is sent
}

// update changes the tally under its lock and wakes its waiters.
func (t *tally) update(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
	close(t.changed)
	t.changed = make(chan struct{})
}

// read runs f under the tally's lock.
func (t *tally) read(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f()
}

// await waits until cond (run under the lock) holds, or ctx ends.
func (t *tally) await(ctx context.Context, what string, cond func() bool) error {
	for {
		t.mu.Lock()
		ok, changed := cond(), t.changed
		t.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
		}
	}
}
