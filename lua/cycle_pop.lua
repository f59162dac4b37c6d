-- cycle_pop.lua, part of the cycle script (cycle.lua's header documents it;
-- lua.go joins the parts in order): taking a batch from store into prepare.

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
-- that copy is settled, so one content is never in flight twice. On a
-- RangeMerge topic a content waiting out a retry's backoff stays in store
-- too: promote merges the two when the wait is over (the copy keeps the
-- retry's time, its first). Nor does it
-- take a content this call commits with a score it could write again: were
-- this call's reply lost, the caller would send that commit again, and it
-- would remove the new delivery it never saw. It stops before such a content
-- (a later call, which does not carry the commit, goes on from it, so the
-- pop order holds). It returns how many it popped, whether it gave up on
-- many held-back entries, whether it stopped so, and whether it left any
-- content within reach in store for its copy in prepare.
local function pop(out)
  local guarded = preparing > 0
  local merging = merge == MERGE_KEEP_FIRST and retrying > 0
  local deferred, heldBack = false, false
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
    local held, waiting
    if guarded or merging then
      local ms = items
      if stride == 2 then
        ms = {}
        for k = 1, #items, 2 do ms[(k + 1) / 2] = items[k] end
      end
      if guarded then held = redis.call('ZMSCORE', prepare, unpack(ms)) end
      if merging then waiting = redis.call('ZMSCORE', retry, unpack(ms)) end
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
        heldBack = true
      elseif waiting and waiting[(k + stride - 1) / stride] then
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
  return popped, budget <= 0, deferred, heldBack
end
