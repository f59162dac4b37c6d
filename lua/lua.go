// Package lua holds the Redis scripts of RMQ, one per file, each opening with
// its KEYS, ARGV and return value. Scripts run through redis.Script, which
// sends EVALSHA and falls back to EVAL when the server lacks the script.
package lua

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed cycle.lua
	cycleSource string
	//go:embed cancel.lua
	cancelSource string
	//go:embed requeue.lua
	requeueSource string
)

var (
	// Cycle settles outcomes, reclaims timed-out and retry-due messages, and pops a batch.
	Cycle = redis.NewScript(cycleSource)
	// Cancel removes a pending message from store and retry.
	Cancel = redis.NewScript(cancelSource)
	// Requeue moves dead messages back to store with fresh retries.
	Requeue = redis.NewScript(requeueSource)
)
