-- cycle.lua: one consumer cycle of one slot. It settles the outcomes of
-- messages delivered earlier, checks the caller's fencing token, reclaims
-- deliveries that timed out, promotes retries whose wait is over, pops a batch
-- of due messages from store into prepare, and says when the slot next needs
-- a look. Every key shares the slot's hash tag.
--
-- The script is this file and, after it, cycle_settle.lua, cycle_sweep.lua,
-- cycle_pop.lua and cycle_run.lua, joined in that order (lua.go): one script,
-- in parts by what they do.
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
-- record ("" for none), and nothing was settled or popped. now is negated
-- when the pop left a content within reach in store because its copy is in
-- prepare (held by a lookahead, say): that one can go once the copy in
-- prepare is settled, which next does not tell. Each popped
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

-- An empty slot (the common case for an idle poll) costs one command, and a
-- token fence one more: a new owner's first look at a slot often finds it
-- empty, and its token must be the record from then on, so that a former
-- owner's pop arriving later is refused.
if n == 0 and redis.call('EXISTS', store, prepare, retry) == 0 then
  if fenceArg ~= '0' and string.sub(fenceArg, 1, 1) ~= '=' then
    local holder = fence()
    if holder then return {0, FENCED, holder} end
  end
  return {0, -1}
end

local t = redis.call('TIME')
local nowSec = tonumber(t[1])
local nowUs = nowSec * 1000000 + tonumber(t[2])
local nowMs = math.floor(nowUs / 1000)

-- How many entries prepare and retry may hold: read once after settling,
-- then kept up to date (retrying may overcount, never undercount), so that
-- the phases skip the reads of a set that is empty.
local preparing, retrying = 0, 0
