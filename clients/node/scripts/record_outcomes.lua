-- drover record-outcomes v3
local function rotate(done, now_ms, max, per)
  redis.call('ZREMRANGEBYSCORE', done, '-inf', now_ms)
  local buckets = redis.call('ZRANGE', done, 0, -1)
  local sizes, total = {}, 0
  for j = 1, #buckets do
    sizes[j] = redis.call('HLEN', done .. ':' .. buckets[j])
    total = total + sizes[j]
  end
  local j = 1
  while total + per > max and j <= #buckets do
    redis.call('UNLINK', done .. ':' .. buckets[j])
    redis.call('ZREM', done, buckets[j])
    total = total - sizes[j]
    j = j + 1
  end
end
local function index(done, key, made, expiry, empty)
  redis.call('PEXPIREAT', key, expiry)
  if not empty then
    local later = redis.call('ZRANGE', done, '(' .. expiry, '+inf', 'BYSCORE')
    for j = 1, #later do
      redis.call('PEXPIREAT', done .. ':' .. later[j], expiry)
      redis.call('ZADD', done, expiry, later[j])
    end
  end
  redis.call('ZADD', done, expiry, made)
  redis.call('PEXPIREAT', done, expiry)
end
local function record(done, now_ms, max, keep, from, to, hint)
  local width = math.max(1000, math.floor(keep / 8))
  local per = math.max(1, math.floor(max / 8))
  local n, held, key, name, expiry, empty = 0, per, nil, '', 0, false
  local hn = hint and tonumber(string.match(hint[1], '^(%d+):%d+$'))
  local he, hh = hint and tonumber(hint[2]), hint and tonumber(hint[3])
  local i = from
  if hn and he and hh and hh >= 0 and hh < per and he >= now_ms + keep and he <= now_ms + width + keep then
    local k = done .. ':' .. hint[1]
    local room = math.min(per - hh, (to - i + 1) / 2, 1000)
    local added = redis.call('HSET', k, '', '', unpack(ARGV, i, i + 2 * room - 1))
    if added == room or redis.call('PTTL', k) > 0 then -- it held its marker, or it has its expiry
      n, held, name, expiry, key = hn, hh + room, hint[1], he, k
      i = i + 2 * room
    else
      redis.call('UNLINK', k) -- gone since the note: not kept without an expiry
    end
  end
  if not key then
    local cur = redis.call('ZRANGE', done, -1, -1, 'WITHSCORES')
    empty = #cur == 0
    if #cur > 0 then
      n = tonumber(string.match(cur[1], '^(%d+):'))
      local e = tonumber(cur[2])
      if e >= now_ms + keep and e <= now_ms + width + keep then
        name, expiry = cur[1], e
        key = done .. ':' .. name
        held = redis.call('HLEN', key)
        if held == 0 then held = per end
      end
    end
  end
  while i <= to do
    local made = nil
    if held >= per then
      if not empty then rotate(done, now_ms, max, per) end
      n, held = n + 1, 0
      made = string.format('%012d:%d', n, now_ms)
      key = done .. ':' .. made
      name, expiry = made, now_ms + width + keep
    end
    local room = math.min(per - held, (to - i + 1) / 2, 1000)
    redis.call('HSET', key, unpack(ARGV, i, i + 2 * room - 1))
    if made then
      index(done, key, made, now_ms + width + keep, empty)
      empty = false
    end
    held = held + room
    i = i + 2 * room
  end
  return name, expiry, held
end
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
record(KEYS[1], now_ms, tonumber(ARGV[1]), tonumber(ARGV[2]), 3, #ARGV)
return (#ARGV - 2) / 2
