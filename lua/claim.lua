-- claim.lua: a worker of the Redis coordinator takes a slot. The slot's owner
-- record lives in the slot's own hash tag, beside its message sets, so the
-- cycle script checks it atomically with every pop and settle.
--
-- KEYS[1] owner    string "<token>:<worker id>" while held, "<token>:" once
--                  released; absent for a slot never claimed
--
-- ARGV[1] expected the record the claimer read ("" for none): a compare-and-set,
--                  so a record that changed meanwhile is left alone. The
--                  claimer has checked that it is released, or that its holder's
--                  membership expired (which is final)
-- ARGV[2] id       the claiming worker id
--
-- Returns {1, new record} when claimed, {0, current record or ""} when the
-- record was not the expected one. Tokens only grow: the new token is the
-- old one plus one, or the Redis time in ms if that is larger, so tokens
-- issued after a loss of data still exceed those issued before it.
local cur = redis.call('GET', KEYS[1])
if (cur or '') ~= ARGV[1] then return {0, cur or ''} end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local token = now
if cur then
  local old = tonumber(string.match(cur, '^(%d+)'))
  if old and old + 1 > token then token = old + 1 end
end
local record = string.format('%d:%s', token, ARGV[2])
redis.call('SET', KEYS[1], record)
return {1, record}
