-- hashread.lua: read a hash on its master. go-redis sends a plain HGET or
-- HGETALL to a replica when the client reads from replicas (ReadOnly,
-- RouteRandomly, RouteByLatency); a script runs on the master. For the reads
-- whose staleness would change what a client does: topic definitions, flow
-- controls, the topics each process consumes.
--
-- KEYS[1] the hash
--
-- ARGV[1] a field (optional)
--
-- Returns the field's value (nil if none) when ARGV[1] is given, else every
-- field and value, flat.
if ARGV[1] then
  return redis.call('HGET', KEYS[1], ARGV[1])
end
return redis.call('HGETALL', KEYS[1])
