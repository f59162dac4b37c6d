-- cycle_settle.lua, part of the cycle script (cycle.lua's header documents it;
-- lua.go joins the parts in order): applying the outcomes a call carries.

local waits
-- waitBefore returns the wait in ms before the retry that follows a failure
-- with `left` retries remaining (retry MAX_RETRIES + 1 - left).
local function waitBefore(left)
  if not waits then
    waits = {}
    for v in string.gmatch(ARGV[6], '[^,]+') do waits[#waits + 1] = tonumber(v) end
  end
  return waits[MAX_RETRIES + 1 - left] or 0
end

-- rollback returns a failed message: merged into a newer copy already waiting in
-- store, dead when no retries are left, else back in store (due now) or in retry.
local function rollback(m, left)
  if redis.call('ZSCORE', store, m) then return end
  if left <= 0 then
    redis.call('ZADD', dead, nowMs, m)
    return
  end
  local wait = waitBefore(left)
  if wait <= 0 then
    redis.call('ZADD', store, left - 1, m)
    return
  end
  -- Due at the first whole millisecond at least wait after now (to the
  -- microsecond): from nowMs, rounded down, a retry would come up to 1 ms
  -- before its wait is over.
  local s = (math.ceil(nowUs / 1000) + wait) * RETRY_SCALE + (left - 1)
  local old = redis.call('ZSCORE', retry, m)
  if (not old) or tonumber(old) > s then
    redis.call('ZADD', retry, s, m)
    retrying = retrying + 1
  end
end

-- restore puts an unprocessed message back with its original score, unless a
-- newer copy waits in store (which a RangeMerge restore may pull earlier).
local function restore(m, orig)
  local s = redis.call('ZSCORE', store, m)
  if (not s) or (merge == MERGE_KEEP_FIRST and tonumber(s) > tonumber(orig)) then
    redis.call('ZADD', store, orig, m)
  end
end

-- asPopped reports whether a prepare score read back (false: no entry) is
-- the one a pop wrote. Scores come back as the integers they were written
-- as; compare the strings, and the numbers only when they differ.
local function asPopped(held, popped)
  if not held then return false end
  return held == popped or tonumber(held) == tonumber(popped)
end

-- Members this call commits (applied or not) with a prepare score this
-- call's pop could write again: popped in this second, or ahead of a due
-- time not yet past. The pop leaves them in store until a later call (see
-- pop). nil when there are none.
local committing

-- mayRecur reports whether a prepare score (a string) is one this call's pop
-- could write: the call pops, and the score's second is not before now's.
local function mayRecur(score)
  return max > 0 and tonumber(score) >= nowSec * PREPARE_SCALE
end

-- noteOnePop fills committing with the commits of ARGV[10] on, popped with
-- oneScore, when the pop could write that score again. (A lookup per
-- commit in store, even in one ZINTER, costs more than this table: the
-- store's entries are cold.)
local function noteOnePop()
  if not mayRecur(oneScore) then return end
  local c, argv = {}, ARGV
  for k = 10, 9 + n do c[argv[k]] = true end
  committing = c
end

-- commitOnePop settles n commits of members popped with one prepare score
-- (ARGV[10] on): it removes those prepare still holds with that score, read
-- at once instead of a score per member, unless more than twice as many
-- entries share the score. When the commits are all the entries of that
-- score (the usual case), it removes the score's range. The members come in
-- byte order, the order prepare keeps the entries of one score in, so that
-- case shows in one pass of string comparisons (Lua compares its strings by
-- reference), before any table is built.
local function commitOnePop()
  noteOnePop()
  local commits, nc = {}, 0 -- nc counts commits (cheaper than #commits)
  local held = redis.call('ZRANGEBYSCORE', prepare, oneScore, oneScore, 'LIMIT', 0, 2 * n + 1)
  if #held == n then
    local k = 1
    while k <= n and held[k] == ARGV[9 + k] do k = k + 1 end
    if k > n then
      redis.call('ZREMRANGEBYSCORE', prepare, oneScore, oneScore)
      return
    end
  end
  if #held <= 2 * n then
    local here = {}
    for k = 1, #held do here[held[k]] = true end
    for k = 10, 9 + n do
      local m = ARGV[k]
      if here[m] then
        nc = nc + 1
        commits[nc] = m
        here[m] = nil -- each once: then as many commits as held means the same set
      end
    end
    if nc > 0 and nc == #held then
      redis.call('ZREMRANGEBYSCORE', prepare, oneScore, oneScore)
      return
    end
  else
    local members = {}
    for k = 1, n do members[k] = ARGV[9 + k] end
    local cur = redis.call('ZMSCORE', prepare, unpack(members))
    for k = 1, n do
      if asPopped(cur[k], oneScore) then
        nc = nc + 1
        commits[nc] = members[k]
      end
    end
  end
  if nc > 0 then redis.call('ZREM', prepare, unpack(commits)) end
end

-- settle applies the outcomes. One applies only while prepare still holds the
-- entry exactly as popped: a late commit never touches a later delivery.
-- The pop of the same call must not write that entry again (see pop).
local function settle()
  if oneScore then return commitOnePop() end
  local members = {}
  for k = 0, n - 1 do members[k + 1] = ARGV[9 + 3 * k] end
  local cur = redis.call('ZMSCORE', prepare, unpack(members))
  local commits, nc = {}, 0
  for k = 0, n - 1 do
    local popped, act = ARGV[10 + 3 * k], ARGV[11 + 3 * k]
    if act == COMMIT and mayRecur(popped) then
      committing = committing or {}
      committing[members[k + 1]] = true
    end
    if asPopped(cur[k + 1], popped) then
      local m = members[k + 1]
      if act == COMMIT then
        nc = nc + 1
        commits[nc] = m
      else
        redis.call('ZREM', prepare, m)
        if act == ROLLBACK then
          rollback(m, tonumber(popped) % PREPARE_SCALE)
        else
          restore(m, string.sub(act, 2))
        end
      end
    end
  end
  if nc > 0 then redis.call('ZREM', prepare, unpack(commits)) end
end
