-- cycle_sweep.lua, part of the cycle script (cycle.lua's header documents it;
-- lua.go joins the parts in order): the fence, timed-out deliveries, due retries.

-- fence returns the owner record when the caller does not hold the slot, nil
-- when it does. An exact fence ("=<record>") holds only while the record is
-- exactly that; a token fence holds unless the record's token is higher, and
-- a higher token becomes the record.
local function fence()
  if fenceArg == '0' then return nil end
  local cur = redis.call('GET', owner)
  if string.sub(fenceArg, 1, 1) == '=' then
    if cur == string.sub(fenceArg, 2) then return nil end
    return cur or ''
  end
  local mine, theirs = tonumber(fenceArg), cur and tonumber(cur)
  if cur and not theirs then
    -- The Redis coordinator's record: released ("<token>:") is free, held
    -- ("<token>:<worker>") is another worker's.
    if not string.match(cur, '^%d+:$') then return cur end
    redis.call('SET', owner, fenceArg)
    return nil
  end
  if theirs and theirs > mine then return cur end
  if (not theirs) or theirs < mine then redis.call('SET', owner, fenceArg) end
  return nil
end

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
-- = retries left), unless a newer copy waits there.
local function promote()
  local last = nowMs * RETRY_SCALE + RETRY_SCALE - 1
  local ready = redis.call('ZRANGEBYSCORE', retry, '-inf', last, 'WITHSCORES', 'LIMIT', 0, SWEEP_LIMIT)
  for k = 1, #ready, 2 do
    local m = ready[k]
    redis.call('ZREM', retry, m)
    retrying = retrying - 1
    if not redis.call('ZSCORE', store, m) then
      redis.call('ZADD', store, tonumber(ready[k + 1]) % RETRY_SCALE, m)
    end
  end
end
