-- hashdelif.lua: delete a hash field only while it holds a given value, so
-- that undoing a write of one's own never removes another's (a topic
-- definition that the coordinator then refused, say).
--
-- KEYS[1] the hash
--
-- ARGV[1] the field
-- ARGV[2] the value it must hold
--
-- Returns 1 if the field was deleted, else 0.
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
