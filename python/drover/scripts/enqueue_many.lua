-- drover enqueue-many v1 (docs/redis-schema.md)
local function decimal(n, hint, text)
  if n == hint then return text end
  return string.format('%d', n)
end
local function nextPosition(seq, hint, estimate, m)
  local last
  if hint > 0 then
    last = redis.call('SET', seq, estimate, 'GET') -- the estimate as :seq; the last position
  else
    last = redis.call('GET', seq)
  end
  last = last and tonumber(last)
  if last and hint > last and hint - last <= 3600000000 then return hint, last end
  local pos
  if last and hint > 0 and hint <= last then
    pos = last + 1
  else
    local t = redis.call('TIME')
    pos = math.max(tonumber(t[1]) * 1000000 + tonumber(t[2]), (last or 0) + 1)
  end
  redis.call('SET', seq, decimal(pos + m - 1))
  return pos, last
end
local n = (#ARGV - 3) / 2
local ids = {}
for i = 1, n do ids[i] = ARGV[2 + 2 * i] end
local known = redis.call('HMGET', KEYS[2], unpack(ids))
local out, fields, fresh, seen = {}, {}, {}, {}
for i = 1, n do
  out[i] = -1
  local id = ids[i]
  if not known[i] and not seen[id] then
    seen[id] = true
    fields[#fields + 1] = id
    fields[#fields + 1] = ARGV[3 + 2 * i]
    fresh[#fresh + 1] = i
  end
end
local m = #fresh
if m == 0 then return out end
redis.call('HSET', KEYS[2], unpack(fields))
local hint = (ARGV[3] or ''):match('^%d+$') and tonumber(ARGV[3]) or 0
local first = nextPosition(KEYS[3], hint, string.format('%d', hint + m - 1), m)
local entries = {}
for j = 1, m do
  entries[2 * j - 1] = string.format('%d', first + j - 1)
  entries[2 * j] = ids[fresh[j]]
  out[fresh[j]] = first + j - 1
end
redis.call('ZADD', KEYS[1], unpack(entries))
if ARGV[1] ~= '' then redis.call('PUBLISH', redis.call('GET', KEYS[4]) or ARGV[1], ARGV[2]) end
return out
