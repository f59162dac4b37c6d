-- stats.lua: add one batch of a client's metrics to the namespace's shared
-- metrics, once. A client numbers its batches and sends a batch whose reply
-- it did not get again, unchanged, before any newer one: the batch's number
-- in the client's mark tells the repeat from a batch still to add. Every key
-- shares the namespace's hash tag.
--
-- KEYS[1]          mark   string the number of the client's last batch added
-- KEYS[2k], KEYS[2k+1]    topic k's all-time hash and the hash of the batch's
--                         minute: field -> count
--
-- ARGV[1] seq      the batch's number
-- ARGV[2] markTTL  ms the mark is kept after the client's last batch
-- ARGV[3] minTTL   seconds a minute's hash is kept
-- ARGV[4..]        per topic, in KEYS' order: n, then n pairs field, increment
--
-- Returns 1 when the batch was added now, 0 when it had been added before.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return 0
end
local a = 4
for k = 2, #KEYS, 2 do
  local n = tonumber(ARGV[a])
  a = a + 1
  for _ = 1, n do
    redis.call('HINCRBY', KEYS[k], ARGV[a], ARGV[a + 1])
    redis.call('HINCRBY', KEYS[k + 1], ARGV[a], ARGV[a + 1])
    a = a + 2
  end
  redis.call('EXPIRE', KEYS[k + 1], ARGV[3])
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
