-- join.lua: register a worker of the Redis coordinator, or update what it
-- says about itself. Every key shares the namespace's hash tag.
--
-- KEYS[1] members  zset   member = worker id; score = membership expiry, Unix ms
--                         by the Redis clock
-- KEYS[2] workers  hash   worker id -> the worker's description (JSON)
-- KEYS[3] version  string counts membership changes
-- KEYS[4] presence zset   the namespace's consuming processes (presence.lua):
--                         a new member is refused while a process of the
--                         local coordinator stands there, which shares the
--                         namespace with nobody (a worker frozen or cut off
--                         past its membership, now back, finds it)
--
-- ARGV[1] id       the worker id (a new one for every incarnation)
-- ARGV[2] ttl      membership lease in ms
-- ARGV[3] info     the worker's description
-- ARGV[4] channel  the coordinator's pub/sub channel
-- ARGV[5] update   "1": only update a live member's description, never revive one
--
-- Returns {now ms, expiry ms}, or {now ms, -1} for an update of a worker whose
-- membership has expired: it is gone for good and must join under a new id;
-- {now ms, -2} when a process of the local coordinator refused the join.
local members, workers, version = KEYS[1], KEYS[2], KEYS[3]
local id, ttl, info, channel = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local expiry = redis.call('ZSCORE', members, id)
if ARGV[5] == '1' then
  if (not expiry) or tonumber(expiry) <= now then return {now, -1} end
else
  for _, p in ipairs(redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. now, '+inf')) do
    if string.sub(p, 1, 6) == 'local/' then return {now, -2} end
  end
  expiry = now + ttl
  redis.call('ZADD', members, expiry, id)
end
redis.call('HSET', workers, id, info)
redis.call('INCR', version)
redis.call('PUBLISH', channel, 'members')
return {now, tonumber(expiry)}
