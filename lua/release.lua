-- release.lua: a worker of the Redis coordinator hands a slot back after its
-- consumer stopped and settled; the next owner may claim it at once.
--
-- KEYS[1] owner    string "<token>:<worker id>" while held, "<token>:" once released
--
-- ARGV[1] record   the record the releasing worker holds
--
-- Returns 1 when released, 0 when the record was no longer the worker's.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local token = string.match(ARGV[1], '^(%d+):')
redis.call('SET', KEYS[1], token .. ':')
return 1
