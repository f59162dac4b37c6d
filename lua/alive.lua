-- alive.lua: which workers of the Redis coordinator are still members, by
-- the Redis clock. A worker found gone never comes back under the same id.
--
-- KEYS[1] members  zset   member = worker id; score = membership expiry, Unix ms
--
-- ARGV[1..] worker ids
--
-- Returns one flag per id: 1 while its membership has not expired, else 0.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for k = 1, #ARGV do
  local e = redis.call('ZSCORE', KEYS[1], ARGV[k])
  if e and tonumber(e) > now then out[k] = 1 else out[k] = 0 end
end
return out
