-- cycle_sweep.lua, part of the cycle script (cycle.lua's header documents it;
-- lua.go joins the parts in order): timed-out deliveries, due retries.

-- reclaim rolls back prepare entries older than the timeout, as if their
-- listener failed. Popped in second S, an entry expires once now >= S + timeout
-- + 1, so it has been held longer than timeout seconds whatever the phase.
local function reclaim()
  local cutoff = string.format('(%d', (nowSec - timeout) * PREPARE_SCALE)
  local expired = redis.call('ZRANGEBYSCORE', prepare, '-inf', cutoff, 'WITHSCORES', 'LIMIT', 0, SWEEP_LIMIT)
  for k = 1, #expired, 2 do
    redis.call('ZREM', prepare, expired[k])
    preparing = preparing - 1
    rollback(expired[k], tonumber(expired[k + 1]) % PREPARE_SCALE)
  end
end

-- promote moves retries whose wait is over back to store as "due now" (score
-- = retries left), unless a newer copy waits there: on a RangeMerge topic a
-- copy sent during the wait merges into the retry and keeps its first due
-- time, the retry's (now), as a restore keeps the lower score; on the others
-- the copy replaces it.
local function promote()
  local last = nowMs * RETRY_SCALE + RETRY_SCALE - 1
  local ready = redis.call('ZRANGEBYSCORE', retry, '-inf', last, 'WITHSCORES', 'LIMIT', 0, SWEEP_LIMIT)
  for k = 1, #ready, 2 do
    local m = ready[k]
    redis.call('ZREM', retry, m)
    retrying = retrying - 1
    local due = tonumber(ready[k + 1]) % RETRY_SCALE
    local copy = redis.call('ZSCORE', store, m)
    if (not copy) or (merge == MERGE_KEEP_FIRST and tonumber(copy) > due) then
      redis.call('ZADD', store, due, m)
    end
  end
end
