-- cycle.lua: one consumer cycle of one slot. It settles the outcomes of
-- messages delivered earlier, checks the caller's fencing token, reclaims
-- deliveries that timed out, promotes retries whose wait is over, pops a batch
-- of due messages from store into prepare, and says when the slot next needs
-- a look. Every key shares the slot's hash tag.
--
-- KEYS[1] store    zset   member = content; score = due ms (RangeMerge,
--                         FixedTime), the priority (Priority), or retries
--                         left 0..16 after a rollback
-- KEYS[2] prepare  zset   member = content; score = pop second * 1000 + retries left
-- KEYS[3] retry    zset   member = content; score = retry due ms * 32 + retries left
-- KEYS[4] dead     zset   member = content; score = time of death in ms
-- KEYS[5] owner    string the slot's owner record: "<token>:<worker>" (Redis
--                         coordinator) or "<token>" (ZooKeeper coordinator)
--
-- ARGV[1] order    "t": due scores <= now, lowest first; "p": highest score first
-- ARGV[2] merge    "m": a restore keeps the lower score (RangeMerge keeps the first
--                  due time); "n": a restore never overwrites a newer copy
-- ARGV[3] max      how many messages to pop; 0 only settles outcomes
-- ARGV[4] timeout  consume timeout in whole seconds
-- ARGV[5] fence    "0": unfenced; "=<record>": the caller holds the slot only
--                  while owner is exactly <record> (Redis coordinator);
--                  "<token>": a caller with a token below owner's may not pop,
--                  a higher one becomes the owner, and so does any caller of
--                  a slot the Redis coordinator released (ZooKeeper coordinator)
-- ARGV[6] waits    comma-separated waits in ms before retry 1..16, for failed and
--                  timed-out deliveries
-- ARGV[7] ahead    ms: a due-order pop also takes messages due up to this long
--                  after now (0: only those due now); the caller hands each
--                  to its listener at its due time
-- ARGV[8] n        number of outcomes; then n triples:
--                  member, prepare score as popped, action where action is
--                  "c" commit | "r" roll back (a retry after its wait, or dead) |
--                  "s<score>" restore unprocessed, with the original store score;
--                  or "=n": n commits of members popped with one prepare score,
--                  that score, then the n members in byte order (the usual
--                  outcome of a pop)
--
-- Returns {now µs, next ms, member1, score1, member2, score2, ...} (now is 0 when
-- the slot was found empty before reading the clock), or, when the popped
-- members' store scores come in runs of equal scores (one priority, a few),
-- the shorter {now µs, next ms, r, length1, score1, ..., length_r, score_r,
-- member1, member2, ...}: r runs (an integer where the other form has a
-- member), each its number of members, in pop order, and their score. next is when
-- something in this slot next becomes due (a future store score, a retry, a
-- prepare timeout), -1 for never, now when the batch came back full or a
-- content was left for the next call (see pop), or -2 when
-- the caller does not hold the slot: then the third element is the owner
-- record ("" for none), and nothing was settled or popped. Each popped
-- member went to prepare with score second * 1000 + retries left, retries
-- left being its store score when that is at most 16, else 16, and second
-- floor(now µs / 10^6), or floor(due ms / 1000) for a member popped ahead of
-- its due time: its consume timeout counts from its due second.
--
-- Time comes from Redis (TIME), so every consumer judges due times and consume
-- timeouts by one clock.

local MAX_RETRIES = 16      -- store scores 0..16 mean "retries left, due now"
local PREPARE_SCALE = 1000  -- prepare score = pop second * 1000 + retries left
local RETRY_SCALE = 32      -- retry score = due ms * 32 + retries left
local SWEEP_LIMIT = 256     -- most timed-out or retry-due entries moved per call
local UNIFORM_MIN = 32      -- priority pops this large look for one shared score
local RUN_MIN = 32          -- ... or for runs of equal scores this long on average
local SCAN_SLACK = 256      -- pop reads at most 4 * max + this many held-back entries
local CROWDED_LOOK_MS = 1000 -- many held-back entries: look again this soon
local FENCED = -2           -- "next" when the caller does not hold the slot
-- Before Redis 7.2, a ZADD that creates its key makes a listpack unless its
-- first member is longer than zset-max-listpack-value (64 by default), and
-- converts it to a skiplist past zset-max-listpack-entries (128): a large
-- batch into an empty prepare paid for the listpack's inserts and the
-- conversion. Such a batch goes in behind a member of 1,056 bytes ('~' 33
-- times this unit), which makes the skiplist at once, and which the same call
-- removes again. It is made only for such a batch: the small pops of
-- punctual traffic cannot spare the time to make it.
local SKIPLIST_FIRST_UNIT, SKIPLIST_FIRST_UNITS = '~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~', 33
local SKIPLIST_FIRST_BELOW = 0x070200 -- from 7.2 a ZADD of many makes a skiplist (redis#12185)
local LISTPACK_ENTRIES = 128

-- The flags of ARGV, named.
local ORDER_DUE, ORDER_PRIORITY = 't', 'p'
local MERGE_KEEP_FIRST = 'm'
local COMMIT, ROLLBACK = 'c', 'r' -- any other action: "s<score>", restore

local store, prepare, retry, dead, owner = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local order, merge = ARGV[1], ARGV[2]
local max = tonumber(ARGV[3])
local timeout = tonumber(ARGV[4])
local fenceArg = ARGV[5]
local ahead = tonumber(ARGV[7])
local n, oneScore = tonumber(ARGV[8]), nil
if not n then n, oneScore = tonumber(string.sub(ARGV[8], 2)), ARGV[9] end

-- An empty slot (the common case for an idle poll) costs one command.
if n == 0 and redis.call('EXISTS', store, prepare, retry) == 0 then return {0, -1} end

local t = redis.call('TIME')
local nowSec = tonumber(t[1])
local nowUs = nowSec * 1000000 + tonumber(t[2])
local nowMs = math.floor(nowUs / 1000)

-- How many entries prepare and retry may hold: read once after settling,
-- then kept up to date (retrying may overcount, never undercount), so that
-- the phases skip the reads of a set that is empty.
local preparing, retrying = 0, 0

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
  local s = (nowMs + wait) * RETRY_SCALE + (left - 1)
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

-- prepareScores caches, per retries left, the prepare score of this call.
local prepareScores = {}

-- prepareScore returns the prepare score of a member popped with store score
-- s (a string): pop second * PREPARE_SCALE + retries left, where retries left
-- is s when at most MAX_RETRIES (a rolled-back message), else MAX_RETRIES. A
-- member popped ahead (a due time after now) counts from its due second.
local function prepareScore(s)
  local left = MAX_RETRIES
  if #s <= 2 then
    left = math.min(math.floor(tonumber(s)), MAX_RETRIES)
  elseif ahead > 0 then
    local due = tonumber(s)
    if due > nowMs then
      return string.format('%d', math.floor(due / 1000) * PREPARE_SCALE + left)
    end
  end
  local p = prepareScores[left]
  if not p then
    p = string.format('%d', nowSec * PREPARE_SCALE + left)
    prepareScores[left] = p
  end
  return p
end

-- readRuns returns the runs of equal scores in priority order from rank
-- offset to rank last, whose scores are hi and lo (strings, hi ~= lo):
-- {end1, score1, end2, score2, ...}, each end the rank after its run. It
-- gives up (nil) once there are more runs than two plus one per RUN_MIN
-- entries they cover.
-- Each run costs two looks; a score read per entry costs Redis a formatting
-- of the score, which a few long runs save.
local function readRuns(offset, last, hi, lo)
  local runs, nr, s = {}, 0, hi
  while s ~= lo do
    -- The ranks before stop hold the scores from s up.
    local stop = redis.call('ZCOUNT', store, s, '+inf')
    runs[nr + 1], runs[nr + 2] = stop, s
    nr = nr + 2
    if nr / 2 > 2 + (stop - offset) / RUN_MIN then return nil end
    s = redis.call('ZREVRANGE', store, stop, stop, 'WITHSCORES')[2]
    if not s then return nil end
  end
  runs[nr + 1], runs[nr + 2] = last + 1, lo
  return runs
end

-- readPriority returns the want entries from rank offset in priority order:
-- member, score pairs; or, when they all share one score, the members alone
-- and that score (two looks cost less than formatting many equal scores);
-- or, when they fall into a few runs of equal scores, the members alone, nil
-- and the runs (see readRuns).
local function readPriority(offset, want)
  local last = offset + want - 1
  if want >= UNIFORM_MIN then
    local hi = redis.call('ZREVRANGE', store, offset, offset, 'WITHSCORES')
    if not hi[2] then return {} end
    local lo = redis.call('ZREVRANGE', store, last, last, 'WITHSCORES')
    if not lo[2] then lo = redis.call('ZRANGE', store, 0, 0, 'WITHSCORES') end
    if lo[2] == hi[2] then return redis.call('ZREVRANGE', store, offset, last), hi[2] end
    local runs = readRuns(offset, last, hi[2], lo[2])
    if runs then return redis.call('ZREVRANGE', store, offset, last), nil, runs end
  end
  return redis.call('ZREVRANGE', store, offset, last, 'WITHSCORES')
end

-- addPrepare adds the score, member pairs padd[1..last] to prepare. A
-- skiplist inserts the entries of one score at least cost in descending
-- member order, each then landing at the head of its score's run; priority
-- pops come in that order, due pops in the reverse, so those go in reversed.
-- A member first (see SKIPLIST_FIRST_UNIT) goes in first and out after.
local function addPrepare(padd, last, first)
  if order == ORDER_DUE then
    local i, j = 1, last - 1
    while i < j do
      padd[i], padd[i + 1], padd[j], padd[j + 1] = padd[j], padd[j + 1], padd[i], padd[i + 1]
      i, j = i + 2, j - 2
    end
  end
  if first then redis.call('ZADD', prepare, 0, first) end
  redis.call('ZADD', prepare, unpack(padd, 1, last))
  if first then redis.call('ZREM', prepare, first) end
end

-- pop moves up to max due messages from store to prepare and appends them to
-- out. A content whose earlier copy is still in prepare stays in store until
-- that copy is settled, so one content is never in flight twice. Nor does it
-- take a content this call commits with a score it could write again: were
-- this call's reply lost, the caller would send that commit again, and it
-- would remove the new delivery it never saw. It stops before such a content
-- (a later call, which does not carry the commit, goes on from it, so the
-- pop order holds). It returns how many it popped, whether it gave up on
-- many held-back entries, and whether it stopped so.
local function pop(out)
  local guarded = preparing > 0
  local deferred = false
  local popped, offset, budget = 0, 0, 4 * max + SCAN_SLACK
  -- Appends keep their own lengths: # searches the table each time.
  local padd, np, no = {}, 0, #out
  local firstFits = (not guarded) and (redis.REDIS_VERSION_NUM or 0) < SKIPLIST_FIRST_BELOW
  local firstLen = #SKIPLIST_FIRST_UNIT * SKIPLIST_FIRST_UNITS
  while popped < max and budget > 0 do
    local want = max - popped
    -- items: member, score pairs; or members alone when all share score
    -- one, or with their scores in runs (see readRuns)
    local items, one, runs
    if order == ORDER_PRIORITY then
      items, one, runs = readPriority(offset, want)
    else
      items = redis.call('ZRANGEBYSCORE', store, '-inf', nowMs + ahead, 'WITHSCORES', 'LIMIT', offset, want)
    end
    local stride = (one or runs) and 1 or 2
    local got = #items / stride
    if got == 0 then break end
    budget = budget - got
    local held
    if guarded then
      local ms = items
      if stride == 2 then
        ms = {}
        for k = 1, #items, 2 do ms[(k + 1) / 2] = items[k] end
      end
      held = redis.call('ZMSCORE', prepare, unpack(ms))
    end
    local took, skipped, ri, npFrom = 0, 0, 1, np
    for k = 1, #items, stride do
      local m, s = items[k], one
      if runs then
        while offset + k > runs[ri] do ri = ri + 2 end -- rank offset + k - 1
        s = runs[ri + 1]
      elseif not s then
        s = items[k + 1]
      end
      if held and held[(k + stride - 1) / stride] then
        skipped = skipped + 1
      elseif committing and committing[m] then
        deferred = true -- and the ones after it, to keep the pop order
        break
      else
        took = took + 1
        if #m == firstLen then firstFits = false end -- it might be that member
        padd[np + 1], padd[np + 2] = prepareScore(s), m
        np = np + 2
        out[no + 1], out[no + 2] = m, s
        no = no + 2
      end
    end
    if took > 0 then
      if skipped == 0 and offset == 0 then
        -- The taken entries are the first ranks in pop order: one range
        -- removal instead of a search per member (deep stores).
        if order == ORDER_PRIORITY then
          redis.call('ZREMRANGEBYRANK', store, -took, -1)
        else
          redis.call('ZREMRANGEBYRANK', store, 0, took - 1)
        end
      else
        local taken = {} -- this round's members in padd
        for i = npFrom + 2, np, 2 do taken[(i - npFrom) / 2] = padd[i] end
        redis.call('ZREM', store, unpack(taken))
      end
    end
    popped = popped + took
    if deferred or skipped == 0 or got < want then break end
    offset = offset + skipped
  end
  local first
  if firstFits and popped > LISTPACK_ENTRIES then first = string.rep(SKIPLIST_FIRST_UNIT, SKIPLIST_FIRST_UNITS) end
  if popped > 0 then addPrepare(padd, np, first) end
  return popped, budget <= 0, deferred
end

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
local popped, crowded, deferred = pop(out)
if popped >= max or deferred then
  out[2] = nowMs
else
  out[2] = nextDue(crowded, popped)
end
if popped >= 4 then
  local runs = runsOf(out, popped)
  if runs then return asRuns(out, popped, runs) end
end
return out
