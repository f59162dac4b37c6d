// Package lua holds the source of RMQ's Redis scripts, one per file, each
// opening with its KEYS, ARGV and return value. Only package internal/rdb
// runs them: it wraps each source once and owns the argument protocol, so
// nothing here is a public API beyond the text of the scripts.
package lua

import _ "embed"

var (
	//go:embed cycle.lua
	cycle string
	//go:embed cancel.lua
	cancel string
	//go:embed requeue.lua
	requeue string
)

// Cycle returns the source of cycle.lua: settle outcomes, check the fencing
// token, reclaim timed-out deliveries, promote due retries, pop a batch.
func Cycle() string { return cycle }

// Cancel returns the source of cancel.lua: remove a pending message.
func Cancel() string { return cancel }

// Requeue returns the source of requeue.lua: move dead messages back to store.
func Requeue() string { return requeue }
