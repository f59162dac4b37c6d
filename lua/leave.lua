-- leave.lua: a worker of the Redis coordinator leaves: its membership and
-- description go, and so does its leader lease if it holds it. Every key
-- shares the namespace's hash tag.
--
-- KEYS[1] members  zset   member = worker id; score = membership expiry
-- KEYS[2] workers  hash   worker id -> the worker's description (JSON)
-- KEYS[3] version  string counts membership changes
-- KEYS[4] leader   string the leader's worker id
--
-- ARGV[1] id       the worker id
-- ARGV[2] channel  the coordinator's pub/sub channel
--
-- Returns 1 if the worker was a member, else 0.
local members, workers, version, leader = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local id, channel = ARGV[1], ARGV[2]
local was = redis.call('ZREM', members, id)
redis.call('HDEL', workers, id)
redis.call('INCR', version)
if redis.call('GET', leader) == id then redis.call('DEL', leader) end
redis.call('PUBLISH', channel, 'members')
return was
