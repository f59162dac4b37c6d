-- cycle.lua: settle the outcomes of delivered messages, reclaim timed-out and
-- retry-due messages, then pop a batch of due messages from store into prepare.
-- One call per batch serves one slot; every key shares the slot's hash tag.
--
-- KEYS[1] store    zset   member = content; score = due ms (RangeMerge,
--                         FixedTime), the priority (Priority), or retries
--                         left 0..16 after a rollback
-- KEYS[2] prepare  zset   member = content; score = pop second * 1000 + retries left
-- KEYS[3] retry    zset   member = content; score = retry due ms * 32 + retries left
-- KEYS[4] dead     zset   member = content; score = time of death in ms
-- KEYS[5] owner    string fencing token of the slot's current owner
--
-- ARGV[1] order    "t": due scores <= now, lowest first; "p": highest score first
-- ARGV[2] merge    "m": a restore keeps the lower score (RangeMerge keeps the first
--                  due time); "n": a restore never overwrites a newer copy
-- ARGV[3] max      how many messages to pop; 0 only settles outcomes
-- ARGV[4] timeout  consume timeout in whole seconds
-- ARGV[5] token    the caller's fencing token; "0" means unfenced
-- ARGV[6] backoff  comma-separated waits in ms before retry 1..16 (for timeouts)
-- ARGV[7] n        number of outcomes; then n triples:
--                  member, prepare score as popped, action where action is
--                  "c" commit | "r<ms>" roll back, retry after ms | "s<score>"
--                  restore unprocessed, with the original store score
--
-- Returns {now µs, next ms, member1, score1, member2, score2, ...} (now is 0 when
-- the slot was found empty before reading the clock) where next
-- is when something in this slot next becomes due (a future store score, a
-- retry, a prepare timeout), -1 for never, now when the batch came back full,
-- or -2 when a higher fencing token owns the slot: then the third element is
-- that token and nothing was popped (outcomes are settled all the same).
--
-- Time comes from Redis (TIME), so every consumer judges due times and consume
-- timeouts by one clock.
local store, prepare, retry, dead, owner = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local order, merge = ARGV[1], ARGV[2]
local max = tonumber(ARGV[3])
local timeout = tonumber(ARGV[4])
local n = tonumber(ARGV[7])

-- An empty slot (the common case for an idle poll) costs one command.
if n == 0 and redis.call('EXISTS', store, prepare, retry) == 0 then return {0, -1} end

local t = redis.call('TIME')
local nowSec = tonumber(t[1])
local nowUs = nowSec * 1000000 + tonumber(t[2])
local nowMs = math.floor(nowUs / 1000)

local waits
local function waitBefore(left)
  -- the retry after a failure with `left` retries remaining is retry 17 - left
  if not waits then
    waits = {}
    for v in string.gmatch(ARGV[6], '[^,]+') do waits[#waits + 1] = tonumber(v) end
  end
  return waits[17 - left] or 0
end

-- rollback returns a failed message: merged into a newer copy already waiting in
-- store, dead when no retries are left, else back in store (due now) or in retry.
local function rollback(m, left, wait)
  if redis.call('ZSCORE', store, m) then return end
  if left <= 0 then
    redis.call('ZADD', dead, nowMs, m)
  elseif wait <= 0 then
    redis.call('ZADD', store, left - 1, m)
  else
    local s = (nowMs + wait) * 32 + (left - 1)
    local old = redis.call('ZSCORE', retry, m)
    if (not old) or tonumber(old) > s then redis.call('ZADD', retry, s, m) end
  end
end

-- 1. Settle outcomes. An outcome applies only while prepare still holds the entry
-- exactly as popped: a late commit never touches a later delivery.
if n > 0 then
  local members = {}
  for k = 0, n - 1 do members[k + 1] = ARGV[8 + 3 * k] end
  local cur = redis.call('ZMSCORE', prepare, unpack(members))
  local commits = {}
  for k = 0, n - 1 do
    local c, ps = cur[k + 1], tonumber(ARGV[9 + 3 * k])
    if c and tonumber(c) == ps then
      local m, act = members[k + 1], ARGV[10 + 3 * k]
      local a = string.sub(act, 1, 1)
      if a == 'c' then
        commits[#commits + 1] = m
      else
        redis.call('ZREM', prepare, m)
        if a == 'r' then
          rollback(m, ps % 1000, tonumber(string.sub(act, 2)))
        else
          local orig = string.sub(act, 2)
          local s = redis.call('ZSCORE', store, m)
          if (not s) or (merge == 'm' and tonumber(s) > tonumber(orig)) then
            redis.call('ZADD', store, orig, m)
          end
        end
      end
    end
  end
  if #commits > 0 then redis.call('ZREM', prepare, unpack(commits)) end
end

if max <= 0 then return {nowUs, -1} end

-- 2. Fencing: a caller with a lower token than the slot's owner may not pop.
if ARGV[5] ~= '0' then
  local cur = redis.call('GET', owner)
  if cur and tonumber(cur) > tonumber(ARGV[5]) then return {nowUs, -2, cur} end
  if (not cur) or tonumber(cur) < tonumber(ARGV[5]) then redis.call('SET', owner, ARGV[5]) end
end

-- 3. Reclaim prepare entries older than the timeout, as if their listener failed.
-- Popped in second S, an entry expires once now >= S + timeout + 1, so it has
-- been held longer than timeout seconds whatever the sub-second phase.
local expired = redis.call('ZRANGEBYSCORE', prepare, '-inf', string.format('(%d', (nowSec - timeout) * 1000),
  'WITHSCORES', 'LIMIT', 0, 256)
for k = 1, #expired, 2 do
  local m, left = expired[k], tonumber(expired[k + 1]) % 1000
  redis.call('ZREM', prepare, m)
  rollback(m, left, waitBefore(left))
end

-- 4. Retries whose wait is over go back to store as "due now" (score = retries left).
local ready = redis.call('ZRANGEBYSCORE', retry, '-inf', nowMs * 32 + 31, 'WITHSCORES', 'LIMIT', 0, 256)
for k = 1, #ready, 2 do
  local m = ready[k]
  redis.call('ZREM', retry, m)
  if not redis.call('ZSCORE', store, m) then redis.call('ZADD', store, tonumber(ready[k + 1]) % 32, m) end
end

-- 5. Pop. A content whose earlier copy is still in prepare stays in store until
-- that copy is settled, so one content is never in flight twice.
local out = {nowUs, -1}
local guarded = redis.call('ZCARD', prepare) > 0
local popped, offset, budget = 0, 0, 4 * max + 256
local padd = {}
while popped < max and budget > 0 do
  local want = max - popped
  local items
  if order == 'p' then
    items = redis.call('ZREVRANGEBYSCORE', store, '+inf', '-inf', 'WITHSCORES', 'LIMIT', offset, want)
  else
    items = redis.call('ZRANGEBYSCORE', store, '-inf', nowMs, 'WITHSCORES', 'LIMIT', offset, want)
  end
  local got = #items / 2
  if got == 0 then break end
  budget = budget - got
  local held
  if guarded then
    local ms = {}
    for k = 1, #items, 2 do ms[#ms + 1] = items[k] end
    held = redis.call('ZMSCORE', prepare, unpack(ms))
  end
  local taken, skipped = {}, 0
  for k = 1, #items, 2 do
    local m, s = items[k], items[k + 1]
    if held and held[(k + 1) / 2] then
      skipped = skipped + 1
    else
      local left = tonumber(s)
      if left > 16 then left = 16 end
      padd[#padd + 1] = nowSec * 1000 + left
      padd[#padd + 1] = m
      taken[#taken + 1] = m
      out[#out + 1] = m
      out[#out + 1] = s
    end
  end
  if #taken > 0 then redis.call('ZREM', store, unpack(taken)) end
  popped = popped + #taken
  if skipped == 0 or got < want then break end
  offset = offset + skipped
end
if #padd > 0 then redis.call('ZADD', prepare, unpack(padd)) end

-- 6. When the slot next needs attention.
if popped >= max then
  out[2] = nowMs
  return out
end
local nxt = -1
local function earlier(v) if nxt < 0 or v < nxt then nxt = v end end
if budget <= 0 then earlier(nowMs + 1000) end -- many blocked entries: look again soon
if order == 't' then
  local h = redis.call('ZRANGEBYSCORE', store, string.format('(%d', nowMs), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if h[2] then earlier(tonumber(h[2])) end
end
local r = redis.call('ZRANGE', retry, 0, 0, 'WITHSCORES')
if r[2] then earlier(math.floor(tonumber(r[2]) / 32)) end
local p = redis.call('ZRANGE', prepare, 0, 0, 'WITHSCORES')
if p[2] then earlier((math.floor(tonumber(p[2]) / 1000) + timeout + 1) * 1000) end
out[2] = nxt
return out
