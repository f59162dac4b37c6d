-- deleteslot.lua: delete one slot of a topic being deleted, in one step: its
-- message sets and its owner record, only if the sets are all empty (or
-- whatever they hold, with force). Checking and deleting in one script means
-- a message stored in the slot after the check cannot be deleted unseen: it
-- is either seen (and the slot refused) or stored after the deletion.
--
-- KEYS[1] store    zset   pending messages
-- KEYS[2] retry    zset   messages waiting for a retry
-- KEYS[3] prepare  zset   messages handed to a consumer
-- KEYS[4] dead     zset   messages out of retries
-- KEYS[5] owner    string the slot's owner record
-- ARGV[1] force    "1": delete whatever the sets hold; "0": only if empty
--
-- Returns {deleted, store, retry, prepare, dead}: deleted is 1 when the keys
-- were deleted, 0 when the slot was refused; the rest are the sizes of the
-- sets before the call.
local function sizes()
  local n = {}
  for i = 1, 4 do n[i] = redis.call('ZCARD', KEYS[i]) end
  return n
end

local function holdsMessages(n)
  return n[1] + n[2] + n[3] + n[4] > 0
end

local n = sizes()
if ARGV[1] ~= '1' and holdsMessages(n) then
  return {0, n[1], n[2], n[3], n[4]}
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return {1, n[1], n[2], n[3], n[4]}
