-- cancel.lua: remove a pending message (waiting in store or for a retry) from
-- its slot. A message already handed to a consumer (in prepare) is not touched.
--
-- KEYS[1] store    zset   pending messages
-- KEYS[2] retry    zset   messages waiting for a retry
-- ARGV[1] member   the message content
--
-- Returns the number of entries removed (0 or 1; 2 if it waited in both).
return redis.call('ZREM', KEYS[1], ARGV[1]) + redis.call('ZREM', KEYS[2], ARGV[1])
