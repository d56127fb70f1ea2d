-- drover job-status v1
local id = ARGV[1]
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local due = redis.call('ZSCORE', KEYS[3], id)
local pos = redis.call('ZSCORE', KEYS[1], id)
local ahead = 0
if pos then ahead = redis.call('ZCOUNT', KEYS[1], '(' .. ARGV[2], '(' .. pos) end
local env = redis.call('HGET', KEYS[2], id)
local dead = redis.call('ZSCORE', KEYS[4], id)
local deadrec = false
if dead then deadrec = redis.call('HGET', KEYS[5], id) end
local rec = false
local buckets = redis.call('ZRANGE', KEYS[6], '+inf', '(' .. math.floor(now_us / 1000), 'BYSCORE', 'REV')
for i = 1, #buckets do
  rec = redis.call('HGET', KEYS[6] .. ':' .. buckets[i], id)
  if rec then break end
end
return {now_us, due, pos, ahead, env, dead, deadrec, rec}
