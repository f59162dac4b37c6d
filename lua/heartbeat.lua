-- heartbeat.lua: renew a worker's membership of the Redis coordinator, keep
-- or take the leader lease, and (the leader) drop expired members. One call
-- per worker per heartbeat, however many slots it owns. Every key shares the
-- namespace's hash tag.
--
-- KEYS[1] members  zset   member = worker id; score = membership expiry, Unix ms
--                         by the Redis clock
-- KEYS[2] workers  hash   worker id -> the worker's description (JSON)
-- KEYS[3] version  string counts membership changes
-- KEYS[4] leader   string the leader's worker id, expiring with its lease
-- KEYS[5] epoch    string counts assignment changes
--
-- ARGV[1] id       the worker id
-- ARGV[2] ttl      lease in ms, for membership and leadership alike
-- ARGV[3] channel  the coordinator's pub/sub channel
-- ARGV[4] lead     "1" if the worker may lead: take a free leader lease, keep
--                  its own; else (a leaving worker) it gives its own up, and
--                  the others, told "members", take it at once
--
-- Returns {now ms, expiry ms, leader id, leader lease left ms, members version,
-- epoch, earliest expiry among the other members (-1: none)}. The expiry is -1
-- when the membership had already expired: an expired membership is never
-- renewed, the worker is gone for good and must join under a new id.
local members, workers, version, leader, epoch = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, ttl, channel = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local old = redis.call('ZSCORE', members, id)
local expiry = -1
if old and tonumber(old) > now then
  expiry = now + ttl
  redis.call('ZADD', members, 'XX', expiry, id)
end

local head = redis.call('GET', leader)
if head == id and ARGV[4] ~= '1' then
  redis.call('DEL', leader)
  head = false
  redis.call('PUBLISH', channel, 'members')
elseif expiry > 0 then
  if head == id then
    redis.call('PEXPIRE', leader, ttl)
  elseif (not head) and ARGV[4] == '1' then
    redis.call('SET', leader, id, 'PX', ttl)
    head = id
    redis.call('PUBLISH', channel, 'leader')
  end
end

if head == id then
  local gone = redis.call('ZRANGEBYSCORE', members, '-inf', now)
  if #gone > 0 then
    redis.call('ZREMRANGEBYSCORE', members, '-inf', now)
    redis.call('HDEL', workers, unpack(gone))
    redis.call('INCR', version)
  end
end

local left = -1
if head then left = redis.call('PTTL', leader) end
local nextExpiry = -1
local first = redis.call('ZRANGE', members, 0, 1, 'WITHSCORES')
for k = 1, #first, 2 do
  if first[k] ~= id then
    nextExpiry = tonumber(first[k + 1])
    break
  end
end
return {now, expiry, head or '', left, tonumber(redis.call('GET', version) or '0'),
  tonumber(redis.call('GET', epoch) or '0'), nextExpiry}
