-- drover enqueue-spread v2 (docs/redis-schema.md)
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
local unowned = ARGV[1]
local hint = (ARGV[2] or ''):match('^%d+$') and tonumber(ARGV[2]) or 0
local n = #KEYS / 4
local out, routes, lasts = {}, {}, {}
local batch, counts, order, sentOn = {}, {}, {}, {}
local function arg(i, f) return ARGV[4 * i - 2 + f] end -- f: 1 name, 2 id, 3 envelope, 4 route
local function isBatch(ch) return string.find(ch, ':wake-b:', 1, true) end
-- addEntry appends queue i's entry of a batch wake-up to the parts b: its
-- header, then its name, id and envelope as they came, so that no string
-- is made of an entry (table.concat copies the parts once) and returns b.
local function addEntry(b, i)
  local q, id, env, last = arg(i, 1), arg(i, 2), arg(i, 3), lasts[i]
  if last and last > 0 and #env <= 4096 then
    b[#b + 1] = string.format('%d %d %d %d %d\n', #q, #id, #env, last, out[i])
    b[#b + 1] = q
    b[#b + 1] = id
    b[#b + 1] = env
  elseif last and #env <= 4096 then -- the queue's first: id and envelope in the envelope's place
    b[#b + 1] = string.format('%d 0 %d 0 %d\n', #q, #id + 1 + #env, out[i])
    b[#b + 1] = q
    b[#b + 1] = id
    b[#b + 1] = '\n'
    b[#b + 1] = env
  else
    b[#b + 1] = string.format('%d 0 0 0 0\n', #q)
    b[#b + 1] = q
  end
  return b
end
-- wakeNow sends queue i's wake-up on ch alone and returns PUBLISH's answer.
local function wakeNow(ch, i)
  local q, id, env, last = arg(i, 1), arg(i, 2), arg(i, 3), lasts[i]
  if isBatch(ch) then return redis.call('PUBLISH', ch, table.concat(addEntry({':1\n'}, i))) end
  if last and last > 0 and #env <= 4096 and string.find(ch, ':wake-e:', 1, true) then
    return redis.call('PUBLISH', ch, q .. '\n' .. string.format('%d %d', last, out[i]) .. '\n' .. id .. '\n' .. env)
  end
  return redis.call('PUBLISH', ch, q)
end
-- reroute: queue i's wake-up on the route sent reached nobody.
local function reroute(i, seen)
  local ch = redis.call('GET', KEYS[4 * i]) or unowned
  if ch ~= seen then wakeNow(ch, i) end
  out[i] = -out[i]
end
-- wake sends queue i's wake-up on ch, or adds it to ch's batch.
local function wake(ch, i, seen)
  if isBatch(ch) then
    if not batch[ch] then batch[ch] = {''}; counts[ch] = 0; order[#order + 1] = ch; sentOn[ch] = {} end
    addEntry(batch[ch], i)
    counts[ch] = counts[ch] + 1
    if seen then table.insert(sentOn[ch], i) end
  elseif wakeNow(ch, i) == 0 and seen then
    reroute(i, seen)
  end
end
for i = 1, n do
  local k = 4 * i - 4
  routes[i] = ''
  if redis.call('HSETNX', KEYS[k + 2], arg(i, 2), arg(i, 3)) == 0 then
    out[i] = -1
  else
    local pos, last = nextPosition(KEYS[k + 3], hint, ARGV[2], 1)
    redis.call('ZADD', KEYS[k + 1], decimal(pos, hint, ARGV[2]), arg(i, 2))
    out[i], lasts[i] = pos, last
    if unowned ~= '' then
      if not last and redis.call('ZCARD', KEYS[k + 1]) == 1 then lasts[i] = 0 end -- the queue's first message
      local seen = arg(i, 4)
      if seen == '-' or seen == '' then
        local ch = redis.call('GET', KEYS[k + 4])
        if seen == '' and ch then routes[i] = ch end
        wake(ch or unowned, i, nil)
      else
        wake(seen, i, seen)
      end
    end
  end
end
for _, ch in ipairs(order) do
  local b = batch[ch]
  b[1] = string.format(':%d\n', counts[ch]) -- the parts' first, kept for it
  if redis.call('PUBLISH', ch, table.concat(b)) == 0 then
    for _, i in ipairs(sentOn[ch]) do reroute(i, ch) end
  end
end
return {out, routes}
