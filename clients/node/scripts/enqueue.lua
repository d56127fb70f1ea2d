-- drover enqueue v3 (docs/redis-schema.md)
-- KEYS: 1 log, 2 msg, 3 seq, 4 delayed, 5 seen, 6 owner -- all of one queue (one hash tag)
-- ARGV: 1 dedupe window in ms, 2 channel when the queue has no owner ('' for no wake-up), 3 queue name,
--       then 4 per message: id, envelope JSON, due in unix ms (0 = now), keyed (1 or 0)
-- Returns per message: its position (> 0), 0 if delayed, -1 if the id was known.
-- Arguments are checked before anything is written.
-- The common call first: one message, generated id (keyed 0), due now. Same effect as the general path below.
if #ARGV == 7 and ARGV[6] == '0' and ARGV[7] == '0' and ARGV[4] ~= '' and tonumber(ARGV[1]) then
  local t = redis.call('TIME')
  local state = redis.call('MGET', KEYS[3], KEYS[6]) -- the last position and the owner's channel
  if redis.call('HSETNX', KEYS[2], ARGV[4], ARGV[5]) == 0 then return {-1} end
  local pos = math.max(tonumber(t[1]) * 1000000 + tonumber(t[2]), tonumber(state[1] or '0') + 1)
  redis.call('ZADD', KEYS[1], pos, ARGV[4])
  redis.call('SET', KEYS[3], pos)
  if ARGV[2] ~= '' then redis.call('PUBLISH', state[2] or ARGV[2], ARGV[3]) end
  return {pos}
end
if #ARGV < 3 or (#ARGV - 3) % 4 ~= 0 or not tonumber(ARGV[1]) then
  return redis.error_reply('drover enqueue: want a window in ms, a channel, a queue, then 4 values per message')
end
for i = 4, #ARGV, 4 do
  if ARGV[i] == '' or not tonumber(ARGV[i + 2]) then
    return redis.error_reply('drover enqueue: message ' .. (i / 4) .. ': empty id or due time not a number')
  end
end
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)
local window = tonumber(ARGV[1])
local state = redis.call('MGET', KEYS[3], KEYS[6]) -- the last position and the owner's channel
local last = tonumber(state[1] or '0')
local out, ready = {}, {}
local added = 0
local purged = false
local first_due = nil
for i = 4, #ARGV, 4 do
  local id, env, due, keyed = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2]), ARGV[i + 3] == '1'
  local result = -1
  local known = false
  if keyed then
    if not purged then
      local old = redis.call('ZRANGE', KEYS[5], '-inf', now_ms, 'BYSCORE', 'LIMIT', 0, 100)
      if #old > 0 then redis.call('ZREM', KEYS[5], unpack(old)) end
      purged = true
    end
    local expiry = redis.call('ZSCORE', KEYS[5], id)
    known = expiry and tonumber(expiry) > now_ms
  end
  if not known and redis.call('HSETNX', KEYS[2], id, env) == 1 then
    added = added + 1
    if keyed then
      redis.call('ZADD', KEYS[5], math.max(now_ms, due) + window, id)
    end
    if due > now_ms then
      redis.call('ZADD', KEYS[4], due, id)
      if not first_due or due < first_due then first_due = due end
      result = 0
    else
      last = math.max(now_us, last + 1)
      ready[#ready + 1] = last
      ready[#ready + 1] = id
      result = last
    end
  end
  out[#out + 1] = result
end
for i = 1, #ready, 2000 do
  redis.call('ZADD', KEYS[1], unpack(ready, i, math.min(i + 1999, #ready)))
end
if #ready > 0 then
  redis.call('SET', KEYS[3], last)
end
if ARGV[2] ~= '' and added > 0 then
  local channel = state[2] or ARGV[2]
  local payload = ARGV[3]
  if first_due then payload = payload .. ' ' .. string.format('%d', first_due) end
  redis.call('PUBLISH', channel, payload)
end
return out
