-- drover enqueue-one v6 (docs/redis-schema.md)
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
if redis.call('HSETNX', KEYS[2], ARGV[3], ARGV[4]) == 0 then return -1 end
local hint = (ARGV[5] or ''):match('^%d+$') and tonumber(ARGV[5]) or 0 -- digits only: it may become :seq as sent
local pos, last = nextPosition(KEYS[3], hint, ARGV[5], 1)
redis.call('ZADD', KEYS[1], decimal(pos, hint, ARGV[5]), ARGV[3])
if ARGV[1] ~= '' then
  if not last and redis.call('ZCARD', KEYS[1]) == 1 then last = 0 end -- the queue's first message
  local function wake(ch)
    if last and last > 0 and #ARGV[4] <= 4096 and (string.find(ch, ':wake-e:', 1, true) or string.find(ch, ':wake-b:', 1, true)) then
      return redis.call('PUBLISH', ch, ARGV[2] .. '\n' .. string.format('%d %d', last, pos) .. '\n' .. ARGV[3] .. '\n' .. ARGV[4])
    end
    if last and #ARGV[4] <= 4096 and string.find(ch, ':wake-b:', 1, true) then -- the first, as enqueue-spread sends it
      return redis.call('PUBLISH', ch, string.format(':1\n%d 0 %d 0 %d\n', #ARGV[2], #ARGV[3] + 1 + #ARGV[4], pos) .. ARGV[2] .. ARGV[3] .. '\n' .. ARGV[4])
    end
    return redis.call('PUBLISH', ch, ARGV[2])
  end
  local seen = ARGV[6]
  if seen and seen ~= '' and wake(seen) > 0 then return pos end
  local ch = redis.call('GET', KEYS[4])
  if (ch or ARGV[1]) ~= seen then wake(ch or ARGV[1]) end
  if seen == '' and ch then return {pos, ch} end
  if seen and seen ~= '' then return -pos end
end
return pos
