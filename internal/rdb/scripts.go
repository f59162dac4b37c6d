package rdb

import (
	"github.com/redis/go-redis/v9"

	"github.com/rmq-go/rmq/lua"
)

// The scripts, each wrapped once: Run sends EVALSHA and falls back to EVAL
// when the server does not have the script yet (after a restart or failover).
var (
	cycleScript   = redis.NewScript(lua.Cycle())
	cancelScript  = redis.NewScript(lua.Cancel())
	requeueScript = redis.NewScript(lua.Requeue())

	deleteSlotScript = redis.NewScript(lua.DeleteSlot())
	statsScript      = redis.NewScript(lua.Stats())
	hashReadScript   = redis.NewScript(lua.HashRead())
	hashDelIfScript  = redis.NewScript(lua.HashDelIf())

	joinScript      = redis.NewScript(lua.Join())
	heartbeatScript = redis.NewScript(lua.Heartbeat())
	leaveScript     = redis.NewScript(lua.Leave())
	assignScript    = redis.NewScript(lua.Assign())
	aliveScript     = redis.NewScript(lua.Alive())
	claimScript     = redis.NewScript(lua.Claim())
	releaseScript   = redis.NewScript(lua.Release())
	presenceScript  = redis.NewScript(lua.Presence())
)
