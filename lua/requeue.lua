-- requeue.lua: move dead messages of one slot back to store with fresh retries.
--
-- KEYS[1] dead     zset   member = content; score = time of death in ms
-- KEYS[2] store    zset   pending messages
-- KEYS[3] retry    zset   messages waiting out a retry backoff; score = due ms
--                         * 32 + retries left (cycle.lua)
-- ARGV[1] limit    the most messages to move in this call
-- ARGV[2..] optional contents to requeue; when given, only those move
--
-- Returns the number of messages taken out of dead. A content already pending
-- keeps its entries (the copies merge), with fresh retries: in store, a
-- rolled-back one's score (its retries left, 0..16) goes up to 16, a due time
-- or a priority stays; in retry, its due time stays and its retries left
-- become 16. Otherwise it is stored with score 16, which reads "due now, 16
-- retries left" for every topic type.
local members
if #ARGV > 1 then
  members = {}
  for k = 2, #ARGV do
    if redis.call('ZSCORE', KEYS[1], ARGV[k]) then members[#members + 1] = ARGV[k] end
  end
else
  members = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
end
local moved = 0
for _, m in ipairs(members) do
  -- A content named twice moves, and counts, once.
  if redis.call('ZREM', KEYS[1], m) == 1 then
    local waiting = redis.call('ZSCORE', KEYS[3], m)
    if waiting then
      waiting = tonumber(waiting)
      redis.call('ZADD', KEYS[3], waiting - waiting % 32 + 16, m)
    end
    if (not waiting) or redis.call('ZSCORE', KEYS[2], m) then
      redis.call('ZADD', KEYS[2], 'GT', 16, m)
    end
    moved = moved + 1
  end
end
return moved
