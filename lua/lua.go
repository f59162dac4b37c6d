// Package lua holds the source of RMQ's Redis scripts, one per file (the
// cycle script, the largest, in five parts joined here), each opening with
// its KEYS, ARGV and return value. Only package internal/rdb
// runs them: it wraps each source once and owns the argument protocol, so
// nothing here is a public API beyond the text of the scripts.
package lua

import _ "embed"

var (
	//go:embed cycle.lua
	cycleHead string
	//go:embed cycle_settle.lua
	cycleSettle string
	//go:embed cycle_sweep.lua
	cycleSweep string
	//go:embed cycle_pop.lua
	cyclePop string
	//go:embed cycle_run.lua
	cycleRun string
	//go:embed cancel.lua
	cancel string
	//go:embed requeue.lua
	requeue string
	//go:embed join.lua
	join string
	//go:embed heartbeat.lua
	heartbeat string
	//go:embed leave.lua
	leave string
	//go:embed assign.lua
	assign string
	//go:embed alive.lua
	alive string
	//go:embed claim.lua
	claim string
	//go:embed release.lua
	release string
	//go:embed presence.lua
	presence string
	//go:embed deleteslot.lua
	deleteSlot string
	//go:embed stats.lua
	stats string
	//go:embed hashread.lua
	hashRead string
	//go:embed hashdelif.lua
	hashDelIf string
)

// cycle is the cycle script: cycle.lua (its header and arguments) and its
// parts, in order.
var cycle = cycleHead + cycleSettle + cycleSweep + cyclePop + cycleRun

// Cycle returns the source of the cycle script (cycle.lua and its parts):
// settle outcomes, check the fencing token, reclaim timed-out deliveries,
// promote due retries, pop a batch.
func Cycle() string { return cycle }

// Cancel returns the source of cancel.lua: remove a pending message.
func Cancel() string { return cancel }

// Requeue returns the source of requeue.lua: move dead messages back to store.
func Requeue() string { return requeue }

// Join returns the source of join.lua: register a worker of the Redis
// coordinator, or update its description.
func Join() string { return join }

// Heartbeat returns the source of heartbeat.lua: renew a membership, keep or
// take the leader lease, drop expired members.
func Heartbeat() string { return heartbeat }

// Leave returns the source of leave.lua: a worker leaves the Redis coordinator.
func Leave() string { return leave }

// Assign returns the source of assign.lua: the leader writes assignments.
func Assign() string { return assign }

// Alive returns the source of alive.lua: which workers are still members.
func Alive() string { return alive }

// Claim returns the source of claim.lua: take a slot's owner record.
func Claim() string { return claim }

// Release returns the source of release.lua: hand a slot's owner record back.
func Release() string { return release }

// Presence returns the source of presence.lua: which processes consume a
// namespace, with which coordinator.
func Presence() string { return presence }

// DeleteSlot returns the source of deleteslot.lua: delete a slot's keys
// only if it holds no message (or whatever it holds, with force).
func DeleteSlot() string { return deleteSlot }

// Stats returns the source of stats.lua: add a batch of a client's metrics to
// the shared ones, once however often it is sent.
func Stats() string { return stats }

// HashRead returns the source of hashread.lua: read a hash, or one of its
// fields, on its master whatever the client's read routing.
func HashRead() string { return hashRead }

// HashDelIf returns the source of hashdelif.lua: delete a hash field only
// while it holds a given value.
func HashDelIf() string { return hashDelIf }
