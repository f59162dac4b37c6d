-- cycle_run.lua, the last part of the cycle script (cycle.lua's header documents
-- it; lua.go joins the parts in order): when to look next, the reply's forms, and
-- the call's steps in order.

-- nextDue returns when the slot next needs a look: the earliest future store
-- score (time topics), retry, or prepare expiry; -1 for never. popped is how
-- many entries this call added to prepare (none older than those before).
local function nextDue(crowded, popped)
  local nxt = -1
  local function earlier(v) if nxt < 0 or v < nxt then nxt = v end end
  if crowded then earlier(nowMs + CROWDED_LOOK_MS) end
  if order == ORDER_DUE then
    local h = redis.call('ZRANGEBYSCORE', store, string.format('(%d', nowMs), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
    if h[2] then earlier(tonumber(h[2])) end
  end
  if retrying > 0 then
    local r = redis.call('ZRANGE', retry, 0, 0, 'WITHSCORES')
    if r[2] then earlier(math.floor(tonumber(r[2]) / RETRY_SCALE)) end
  end
  if preparing > 0 then
    local p = redis.call('ZRANGE', prepare, 0, 0, 'WITHSCORES')
    if p[2] then earlier((math.floor(tonumber(p[2]) / PREPARE_SCALE) + timeout + 1) * 1000) end
  elseif popped > 0 then
    earlier((nowSec + timeout + 1) * 1000)
  end
  return nxt
end

-- runsOf returns the number of runs of equal scores among the n members
-- popped into out, or nil once the run form (see the header) would be no
-- shorter: 3 + 2 * runs + n elements against 2 + 2 * n. Equal scores are one
-- string (Lua interns them): each comparison is a reference compare.
local function runsOf(out, n)
  local runs = 1
  for i = 6, 2 + 2 * n, 2 do
    if out[i] ~= out[i - 2] then
      runs = runs + 1
      if 2 * runs + 1 >= n then return nil end
    end
  end
  return runs
end

-- asRuns returns the reply out of a call that popped n members, in runs
-- runs of equal scores, in its run form: each score once per run instead of
-- once per member, which Redis and the caller then convert that much less
-- often.
local function asRuns(out, n, runs)
  local r, nr = {out[1], out[2], runs}, 3
  local length, score = 1, out[4]
  for i = 6, 2 + 2 * n, 2 do
    if out[i] == score then
      length = length + 1
    else
      r[nr + 1], r[nr + 2] = length, score
      nr, length, score = nr + 2, 1, out[i]
    end
  end
  r[nr + 1], r[nr + 2] = length, score
  nr = nr + 2
  for i = 3, 1 + 2 * n, 2 do
    nr = nr + 1
    r[nr] = out[i]
  end
  return r
end

local holder = fence()
if holder then return {nowUs, FENCED, holder} end
if n > 0 then settle() end
if max <= 0 then return {nowUs, -1} end
preparing = redis.call('ZCARD', prepare)
retrying = redis.call('ZCARD', retry)
if preparing > 0 then reclaim() end
if retrying > 0 then promote() end
local out = {nowUs, -1}
local popped, crowded, deferred, heldBack = pop(out)
if popped >= max or deferred then
  out[2] = nowMs
else
  out[2] = nextDue(crowded, popped)
end
if heldBack then out[1] = -nowUs end
if popped >= 4 then
  local runs = runsOf(out, popped)
  if runs then return asRuns(out, popped, runs) end
end
return out
