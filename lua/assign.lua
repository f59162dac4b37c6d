-- assign.lua: the leader of the Redis coordinator writes new assignments of
-- slots to worker threads, only while it still holds the leader lease. Every
-- key shares the namespace's hash tag.
--
-- KEYS[1] leader   string the leader's worker id
-- KEYS[2] epoch    string counts assignment changes
-- KEYS[3..] assignment  string, one per topic: the assignment (JSON)
--
-- ARGV[1] id       the writer's worker id
-- ARGV[2] channel  the coordinator's pub/sub channel
-- ARGV[3..] one assignment per KEYS[3..]
--
-- Returns the new epoch, or -1 (nothing written) when the writer does not
-- hold the leader lease.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
for k = 3, #KEYS do redis.call('SET', KEYS[k], ARGV[k]) end
local e = redis.call('INCR', KEYS[2])
redis.call('PUBLISH', ARGV[2], 'epoch')
return e
