-- presence.lua: record that a process consumes a namespace, and refuse
-- neighbours it cannot share the namespace with: a process of the local
-- coordinator shares it with nobody, and processes of different coordinators
-- (Redis, ZooKeeper) do not share one either.
--
-- KEYS[1] presence zset   member = "<coordinator>/<process id>"; score =
--                         expiry, Unix ms by the Redis clock
-- KEYS[2] topics   hash   member → the topics it consumes (comma-separated)
-- KEYS[3] members  zset   given on a local process's "join" only: the Redis
--                         coordinator's workers (join.lua), with none of
--                         whom, entry or not, whose membership has not
--                         expired, a local process shares the namespace (its
--                         leases last until then: a worker frozen or cut off
--                         past its presence entry's expiry). Not given
--                         otherwise: a Cluster refuses (TRYAGAIN) a script
--                         naming a key that does not exist while its hash
--                         slot migrates, and this one often does not; once
--                         the local process stands, join.lua refuses
--                         members.
--
-- ARGV[1] me       "<coordinator>/<process id>"
-- ARGV[2] ttl      ms until the entry expires unless renewed
-- ARGV[3] mode     "join": add me unless a neighbour conflicts; "renew": the
--                  same, but keep me even then; "leave": remove me
-- ARGV[4] topics   the topics me consumes, comma-separated
--
-- Returns {conflict, now}: conflict is "" when the entry stands (or left),
-- else the first conflicting neighbour's entry (on "join" nothing was
-- added); now is the Redis clock in µs (0 on "leave"), by which a client
-- learns how far its own clock is off (redisClock).
local presence, topics, me = KEYS[1], KEYS[2], ARGV[1]
if ARGV[3] == 'leave' then
  redis.call('ZREM', presence, me)
  redis.call('HDEL', topics, me)
  return {'', 0}
end
local t = redis.call('TIME')
local nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(nowUs / 1000)
local gone = redis.call('ZRANGEBYSCORE', presence, '-inf', now)
if #gone > 0 then
  redis.call('ZREMRANGEBYSCORE', presence, '-inf', now)
  redis.call('HDEL', topics, unpack(gone))
end
local kind = string.match(me, '^([^/]*)/')
local conflict = ''
for _, other in ipairs(redis.call('ZRANGE', presence, 0, -1)) do
  if other ~= me then
    local k = string.match(other, '^([^/]*)/')
    if kind == 'local' or k == 'local' or k ~= kind then
      conflict = other
      break
    end
  end
end
if conflict == '' and kind == 'local' and KEYS[3] then
  local live = redis.call('ZRANGEBYSCORE', KEYS[3], '(' .. now, '+inf', 'LIMIT', 0, 1)
  if #live > 0 then conflict = 'redis/member ' .. live[1] end
end
if conflict ~= '' and ARGV[3] == 'join' then return {conflict, nowUs} end
redis.call('ZADD', presence, now + tonumber(ARGV[2]), me)
redis.call('HSET', topics, me, ARGV[4] or '')
return {conflict, nowUs}
