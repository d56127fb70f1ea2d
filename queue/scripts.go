package queue

import "github.com/redis/go-redis/v9"

// Every Lua script of the package. Each one touches the keys of exactly one
// queue (one hash tag, one Cluster slot), documents its KEYS and ARGV, and is
// run with EVALSHA (falling back to EVAL when the server does not know it,
// e.g. after a restart).
//
// Positions are microseconds since the epoch from Redis TIME, made strictly
// increasing with the :seq key: pos = max(now_us, last + 1). Lua numbers are
// doubles, which hold these integers exactly (2^53 µs is year 2255); Redis
// turns Lua numbers passed to redis.call into strings with 17 significant
// digits, so scores stay exact.

// enqueueSource adds messages to one queue, each id at most once. It is the
// script docs/redis-schema.md documents for producers in other languages
// (the doc quotes it verbatim; a test checks that).
//
//	KEYS[1] log      KEYS[2] msg      KEYS[3] seq
//	KEYS[4] delayed  KEYS[5] seen     KEYS[6] owner
//	ARGV[1] dedupe window in ms: how long a caller-chosen id stays known
//	ARGV[2] the channel for a queue without an owner: the wake-up goes to
//	        the channel the :owner key names, or to this one; "": no wake-up
//	ARGV[3] the queue name (the wake-up payload)
//	then 4 per message:
//	  id, envelope JSON, due time in unix ms ("0" = now),
//	  keyed ("1": a caller-chosen id, remembered in :seen for the window)
//
// Returns one integer per message: its position (> 0) when it went to the
// log, 0 when it went to the delayed set, -1 when the id was already known
// (pending in :msg, delayed, or keyed and inside the dedupe window) and
// nothing was written. The wake-up payload is the queue name, followed by a
// space and the earliest due time (unix ms) when delayed messages were
// added: one PUBLISH per call, received by the owner alone.
const enqueueSource = `-- drover enqueue v3 (docs/redis-schema.md)
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
`

// enqueueAdmittedSource is enqueueSource with an admission first: the HTTP
// producer's enqueue, one command for a queue the registry lists
// (docs/decisions.md, "Issue 42: one round trip per HTTP enqueue"). It
// enqueues exactly as enqueueSource (whose text it runs, unchanged, as a
// function) when the queue is in the queue registry SET; otherwise, by
// mode, it refuses and writes nothing ("known"), or enqueues and registers
// the queue ("register": a queue configured on its own), or admits the
// queue into a family while the family holds fewer queues than its bound
// ("family": registered, counted in the family's entry of the family
// counts HASH and named in the queue's :family key, which the retire
// script reads to give the room back). The registry and the counts live
// in other slots than the queue: not for a Redis Cluster.
//
//	KEYS[1..6] as enqueueSource  KEYS[7] the queue registry SET
//	KEYS[8] the family counts HASH  KEYS[9] the queue's :family
//	ARGV as enqueueSource, then 3 more: the mode ("known", "register" or
//	"family"), the family's name, the family's bound (> 0; "family" only)
//
// Returns enqueueSource's reply, or, having written nothing, one -2 per
// message when the queue is not registered and the mode is "known", one
// -3 per message when the family holds its bound already.
const enqueueAdmittedSource = "-- drover enqueue-admitted v1 (docs/redis-schema.md)\n" + `local bound = tonumber(table.remove(ARGV))
local family = table.remove(ARGV)
local mode = table.remove(ARGV)
local admit = redis.call('SISMEMBER', KEYS[7], ARGV[3]) == 0
local function refuse(code)
  local out = {}
  for i = 4, #ARGV, 4 do out[#out + 1] = code end
  return out
end
if admit then
  if mode == 'known' then return refuse(-2) end
  if mode == 'family' and tonumber(redis.call('HGET', KEYS[8], family) or '0') >= bound then return refuse(-3) end
end
local function enqueue()
` + enqueueSource + `
end
local out = enqueue()
if admit and not out.err then
  redis.call('SADD', KEYS[7], ARGV[3])
  if mode == 'family' and redis.call('SET', KEYS[9], family, 'NX') then redis.call('HINCRBY', KEYS[8], family, 1) end
end
return out
`

// enqueueOneSource is enqueueSource's common call as a script of its own:
// one message with a generated id (not remembered for a dedupe window), due
// now, the call a lone Producer.Enqueue makes. Same effect as enqueueSource
// with that one message; it carries only what that call uses (4 keys, 5
// arguments, no checks of unused ones) and returns a plain integer, so a
// round trip moves fewer bytes and the server runs less Lua
// (docs/decisions.md, "Worker path and enqueue cost").
//
// It runs fewer commands than the general script's shortcut (docs/decisions.md,
// "Issue 43: enqueue at asynq's cost"): the producer sends its estimate of
// Redis's clock (Store keeps one from a TIME every few seconds), so that the
// common call needs no TIME; one SET … GET writes that estimate as the new
// :seq and returns the last position in the same command; the :owner key is
// read only when a wake-up is sent. The position is the same rule as
// everywhere, max(now, last + 1), with the estimate as now: it is taken as
// the position when it lies after the last position and at most an hour
// past it; when it is not after the last one the position is last + 1; when
// there is no estimate ("0"), no last position (a new queue) or the estimate
// is more than an hour past the last position, the script reads TIME as
// before. So positions strictly increase and never go back whatever the
// estimate says, and a wrong estimate can move them at most an hour ahead.
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] seq  KEYS[4] owner
//	ARGV[1] the channel for a queue without an owner ("": no wake-up)
//	ARGV[2] the queue name (the wake-up payload)
//	ARGV[3] id  ARGV[4] envelope JSON
//	ARGV[5] Redis's clock in µs as the producer estimates it, in decimal
//	        digits ("0", or anything else: none)
//
// The wake-up of a queue routed to an entry or a batch channel (a name
// holding ":wake-e:" or, since v5, ":wake-b:": queue.entryChannel,
// queue.batchChannel) carries the message when the queue had a last
// position and the envelope is at most 4 KB:
// "<queue>\n<prev> <pos>\n<id>\n<envelope>", prev being that last position
// (docs/redis-schema.md, "Wake-ups"); any other wake-up is the queue's
// name, as before (v2).
//
// The owner's route is read for every wake-up unless the producer sends the
// route it last saw (v4; docs/decisions.md, "Issue 43: a producer keeps the
// owner's route"):
//
//	ARGV[6] (optional) "": read the route and answer it; a channel: the
//	        route the producer last saw for the queue
//
// With a route sent, the wake-up goes there first, and :owner is read only
// when nobody received it (PUBLISH answered 0: the member is gone, or the
// producer's route is out of date and the member with it stopped): then
// the wake-up goes where :owner says, unless that is the same channel, and
// the answer is the position negated, so that the producer reads the route
// again. A route sent that names a live member which no longer owns the
// queue reaches that member, which passes the wake-up on
// (Listener.ForwardWakeups). PUBLISH answers the receivers of the server
// the script runs on: exact on a single server or a Sentinel set, not on a
// Cluster, whose producers send no route.
//
// Returns the message's position (> 0), or -1 when the id was already in
// :msg and nothing was written; -position when the route sent reached
// nobody; {position, route} when asked for the route and the queue has one.
const enqueueOneSource = "-- drover enqueue-one v6 (docs/redis-schema.md)\n" + nextPositionFunction + `if redis.call('HSETNX', KEYS[2], ARGV[3], ARGV[4]) == 0 then return -1 end
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
`

// nextPositionFunction is nextPosition(seq, hint, estimate, m), the
// position rule of the scripts that take the producer's clock estimate
// (enqueueOneSource, enqueueManySource, enqueueSpreadSource) for m
// consecutive positions: hint is the producer's estimate of Redis's clock
// in µs (0: none), estimate the last of the m positions from hint (hint +
// m − 1) in decimal digits, written as the new :seq by the SET … GET that
// answers the last position (for one message, the argument as sent). It
// returns the first position and the last position before them (nil for a
// queue with none): the estimate when it lies after the last position and
// at most an hour past it, last + 1 when it is not after it, else
// max(TIME, last + 1); :seq holds the last of the m positions after it.
//
// It comes with decimal(n, hint, text), a position as the decimal digits a
// script hands Redis: text when n is hint (the producer's estimate as
// sent), else Lua's '%d'. A Lua number given to redis.call costs Redis a
// '%.17g' conversion (glibc's exact floating-point printer), and a '%.0f'
// in string.format the same, about twice the time of '%d' and far more
// than passing the text on; the scripts format positions only so
// (docs/decisions.md, "Issue 43: positions handed to Redis as text").
const nextPositionFunction = `local function decimal(n, hint, text)
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
`

// enqueueManySource is enqueueOneSource for several messages to one queue,
// all with generated ids and due now: what the coalescer sends for
// concurrent Producer.Enqueue calls, and EnqueueBatch for such a batch. Same
// effect as enqueueSource with those messages, in a number of commands that
// does not grow with the batch (docs/decisions.md, "Issue 43: enqueue at
// asynq's cost"): one HMGET finds the ids :msg already holds, one HSET
// writes the others' envelopes, one SET … GET moves :seq past the batch
// (TIME only as in enqueueOneSource), one ZADD appends them, and one
// wake-up. Positions are consecutive from max(now, last + 1), now being the
// producer's estimate under enqueueOneSource's rule. An id that comes
// twice in one call is written once (its later copies answer -1).
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] seq  KEYS[4] owner
//	ARGV[1] the channel for a queue without an owner ("": no wake-up)
//	ARGV[2] the queue name (the wake-up payload)
//	ARGV[3] Redis's clock in µs as the producer estimates it, in decimal
//	        digits ("0", or anything else: none)
//	then 2 per message: id, envelope JSON (at most 1000 messages)
//
// Returns one integer per message: its position (> 0), or -1 when the id
// was already in :msg (or earlier in the call) and nothing was written for
// it.
const enqueueManySource = "-- drover enqueue-many v1 (docs/redis-schema.md)\n" + nextPositionFunction + `local n = (#ARGV - 3) / 2
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
`

// enqueueSpreadSource is enqueueOneSource for several queues, one message
// each, in one call: what EnqueueBatch sends for a batch over a fleet's keys
// (a message to each of many queues) and the coalescer for concurrent
// lone Enqueue calls to different queues, on a standalone server or a
// Sentinel set (its keys span slots: not on a Cluster, whose producers
// send a call per queue). Each queue's message is stored as enqueueOneSource
// stores it (HSETNX, SET … GET, ZADD: the same positions), and its
// wake-up goes where enqueueOneSource's would, with one difference: the
// wake-ups of the call that go to one batch channel (a name holding
// ":wake-b:", queue.batchChannel) are sent together, as one PUBLISH, so
// that a call costs a PUBLISH per owner, not per message
// (docs/decisions.md, "Issue 43: a fleet's batch in one call, its wake-ups
// one per owner"). The batch payload is ":<n>\n" followed by n entries,
// each "<len(queue)> <len(id)> <len(envelope)> <prev> <pos>\n" then the
// queue's name, the id and the envelope, bytes as counted; an entry that
// carries no message (the queue's first, or an envelope over 4 KB) is
// "<len(queue)> 0 0 0 0\n<queue>". A queue name holds no ':', so no other
// wake-up starts so. Any other channel gets enqueueOneSource's wake-up, one
// PUBLISH a message.
//
//	KEYS: 4 per queue: log, msg, seq, owner
//	ARGV[1] the channel for a queue without an owner ("": no wake-ups)
//	ARGV[2] Redis's clock in µs as the producer estimates it, as in
//	        enqueueOneSource
//	then 4 per queue: its name, the id, the envelope JSON, and the route:
//	        "-" read :owner; "" read :owner and answer it; a channel: the
//	        route the producer last saw (enqueueOneSource's ARGV[6])
//
// Returns {positions, routes}: per queue its position (> 0), -1 when the
// id was already in :msg and nothing was written, -position when the
// route sent reached nobody (the wake-up then went where :owner says,
// unless there); and the route :owner named when asked ("" otherwise).
// A batch on a route sent that reached nobody is sent again, queue by
// queue, where each queue's :owner says.
const enqueueSpreadSource = "-- drover enqueue-spread v2 (docs/redis-schema.md)\n" + nextPositionFunction + `local unowned = ARGV[1]
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
`

// readAfterSource reads up to n messages after an offset, in position order,
// each with its recorded starts (its field <id>\0a in :msg, beside the
// envelope): the owner decides a message's attempt from that count and its
// own starts since the read, with no round trip of its own before a first
// start (docs/decisions.md, "Issue 40: a first start is recorded without
// waiting"). It first moves the starts the old layout kept in :attempts
// into :msg (migrateStartsFunction).
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] attempts (the old layout's starts)
//	ARGV[1] the exclusive lower bound, "(<offset>"
//	ARGV[2] n, the most entries to return (> 0)
//
// Returns {} when nothing follows the offset, else {entries, values,
// values…}: entries is the flat ZRANGE WITHSCORES reply {id1, pos1, id2,
// pos2, …}, followed by one or more HMGET replies (1000 ids each), each
// holding per id its envelope then its recorded starts (nil where :msg has
// no such field).
const readAfterSource = "-- drover read-after v3\n" + migrateStartsFunction + `migrate(KEYS[2], KEYS[3])
local r = redis.call('ZRANGE', KEYS[1], ARGV[1], '+inf', 'BYSCORE', 'LIMIT', 0, ARGV[2], 'WITHSCORES')
if #r == 0 then return {} end
local out = {r}
local fields = {}
for i = 1, #r, 2 do
  fields[#fields + 1] = r[i]
  fields[#fields + 1] = r[i] .. '\0a'
  if #fields == 2000 or i + 1 == #r then
    out[#out + 1] = redis.call('HMGET', KEYS[2], unpack(fields))
    fields = {}
  end
end
return out
`

// readManySource is readAfterSource for many queues in one call: the
// owner's reader sends the reads of the queues woken since its last round
// trip together (DESIGN.md §10). The queues of one call share a slot on a
// Cluster. A read that asks for the recorded starts gets them from the same
// HMGET as the envelopes (the field <id>\0a of :msg), after the starts the
// old layout kept in :attempts have been moved there
// (migrateStartsFunction).
//
//	KEYS: 3 per queue: log, msg, attempts (the old layout's starts)
//	ARGV: 3 per queue: the exclusive lower bound "(<offset>", n (1..1000),
//	      "1" to read the recorded starts too, else "0"
//
// Returns 2 values per queue: the flat ZRANGE WITHSCORES reply {id1, pos1,
// …} (empty when nothing follows the offset) and the HMGET reply (empty with
// no ids): the envelopes in the same order (nil where :msg has no entry)
// or, when asked for the starts, per id its envelope then its recorded
// starts (nil where none is recorded). An owner asks until it has caught up
// once since its claim (worker/loop.go).
const readManySource = "-- drover read-many v3\n" + migrateStartsFunction + `local out = {}
for i = 1, #ARGV / 3 do
  local starts = ARGV[3 * i] == '1'
  if starts then migrate(KEYS[3 * i - 1], KEYS[3 * i]) end
  local r = redis.call('ZRANGE', KEYS[3 * i - 2], ARGV[3 * i - 2], '+inf', 'BYSCORE', 'LIMIT', 0, ARGV[3 * i - 1], 'WITHSCORES')
  out[#out + 1] = r
  if #r == 0 then
    out[#out + 1] = {}
  else
    local fields = {}
    for j = 1, #r, 2 do
      fields[#fields + 1] = r[j]
      if starts then fields[#fields + 1] = r[j] .. '\0a' end
    end
    out[#out + 1] = redis.call('HMGET', KEYS[3 * i - 1], unpack(fields))
  end
end
return out
`

// migrateStartsFunction is migrate(msg, attempts): a fleet upgraded in place
// from the layout that kept a message's recorded starts in the queue's
// :attempts hash (id → starts; docs/decisions.md, "Issue 43: a message's
// starts beside its envelope, the dedupe sweep one trim in ten") moves them into :msg, adding each to the
// message's field <id>\0a (a start recorded since under the new layout is
// kept: the sum is the message's starts), drops those of messages :msg no
// longer holds (left behind), and deletes :attempts. The reads that ask
// for starts run it first, and an owner asks for them from its claim until
// it has caught up, before any start: every message another owner could
// have started is in :msg (pending or delayed) by then, so its count moves
// before this owner reads or records it. Cost: one EXISTS while :attempts
// does not exist; the whole hash once when it does (it holds only the
// messages started and not trimmed yet).
const migrateStartsFunction = `local function migrate(msg, attempts)
  if redis.call('EXISTS', attempts) == 0 then return end
  local old = redis.call('HGETALL', attempts)
  for i = 1, #old, 2 do
    if redis.call('HEXISTS', msg, old[i]) == 1 then redis.call('HINCRBY', msg, old[i] .. '\0a', old[i + 1]) end
  end
  redis.call('DEL', attempts)
end
`

// promoteSource moves due ids from the delayed set into the log, with
// fresh positions. An id already in the log (ZSET members are unique) has
// its position moved up.
//
//	KEYS[1] log  KEYS[2] seq  KEYS[3] delayed
//	ARGV[1] now, unix ms: ids due at or before it are promoted
//	ARGV[2] the most ids to promote (> 0)
//
// Returns {the number of ids promoted, the due time in unix ms of the
// earliest id still delayed (0: none)}: the owner learns when to promote
// next without polling (DESIGN.md §10).
const promoteSource = "-- drover promote v2\n" + chunkedFunction + `local ids = redis.call('ZRANGE', KEYS[3], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[2])
if #ids > 0 then
  local t = redis.call('TIME')
  local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local last = tonumber(redis.call('GET', KEYS[2]) or '0')
  local ready = {}
  for i = 1, #ids do
    last = math.max(now_us, last + 1)
    ready[#ready + 1] = last
    ready[#ready + 1] = ids[i]
  end
  chunked('ZADD', KEYS[1], ready, 2000)
  chunked('ZREM', KEYS[3], ids, 1000)
  redis.call('SET', KEYS[2], last)
end
local nxt = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
return {#ids, (#nxt > 0) and tonumber(nxt[2]) or 0}
`

// revokeSource deletes a delayed message, leaving nothing of it in the
// queue (its id may be enqueued again): its envelope and its recorded
// starts (the field <id>\0a of :msg) go. The "revoked" outcome record is
// written afterwards with record-outcomes. KEYS[5], the old layout's
// :attempts, is optional (v1 took four keys): given, the message's starts
// are deleted there too, for a message whose starts the old layout kept.
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] delayed  KEYS[4] seen  KEYS[5] attempts
//	ARGV[1] id
//
// Returns 1 if the id was delayed (and is now gone), 0 if it was unknown or
// already promoted (nothing is changed then).
const revokeSource = `-- drover revoke v3
if redis.call('ZREM', KEYS[3], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1], ARGV[1] .. '\0a')
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
if KEYS[5] then redis.call('HDEL', KEYS[5], ARGV[1]) end
return 1
`

// Outcome records live in buckets: HASHes named <done>:<n>:<start ms> (id
// → record JSON), listed in the index <done> (ZSET "<n>:<start ms>" →
// expiry, unix ms; n is zero-padded to 12 digits so that ties in expiry
// sort by age). A bucket takes records for width = 1/8 of the retention (at
// least 1 s) and at most per = 1/8 of the bound. Its expiry is fixed when
// it is made: start + width + retention, so that a record written into it
// while it is current lives at least the retention; it is set once
// (PEXPIREAT, ZADD) and a later record costs one HSET. The script writes
// into the newest bucket (ZRANGE -1 -1) unless it holds per records, is
// gone (HLEN 0), or its expiry does not fit the retention now: earlier
// than now + retention (the width passed, or the retention was raised) or
// later than now + width + retention (the retention was lowered). Then it
// makes a new bucket (rotation), and only then does it the bookkeeping:
// drop expired index entries, delete the oldest buckets whole until the
// others hold at most bound − per (room for the new one to fill, so the
// total stays within the bound), lower to the new expiry any bucket that
// expires later (a lowered retention applies to the records kept, and the
// index stays in age order), and set the index to expire with its newest
// bucket. A raised bound takes effect at the next rotation; a lowered one
// at once if the current bucket holds the new per, else within per new
// records. So a record costs ZRANGE, HLEN and HSET (and TIME per call),
// expiry is Redis's own, and a lookup reads at most a few buckets. A
// queue with no index (its first record, or none kept for the retention:
// the index expires with its newest bucket) has nothing to rotate or lower:
// its record skips that bookkeeping and costs ZRANGE, HSET, two PEXPIREATs
// and a ZADD — the record of a key that gets a message now and then. The
// bucket keys are not in KEYS: they are derived from the index key and
// carry its hash tag, so they live in the same Cluster slot.
//
// A queue's owner is the one writer of its records while it owns it, so
// trim-many hands it back the bucket its records went to (name, expiry,
// records held) and takes that note with its next records: a bucket whose
// expiry still fits the retention and that is not full is written to
// without the ZRANGE and the HLEN, with one HSET that also sets the
// bucket's marker, the field "" (a job id is never empty; readers skip
// it). HSET answers how many fields it added: as many as the records when
// the marker was there, so the bucket was; one more when the marker was
// new, because the bucket never had one (its first noted write: then it
// has its expiry, PTTL > 0) or because it was deleted since the note (a
// retire, another writer's rotation) and HSET made it again, with no
// expiry: then the script deletes it and writes the records as if there
// were no note. A noted record costs one HSET (docs/decisions.md, "Issue
// 43: the noted bucket's marker"); the caller sends a note only with
// records whose ids differ (appendNote). A note made stale by another
// writer (an operator's record, a previous owner) costs at most those
// records over the bucket's size (docs/decisions.md, "Issue 43: the
// owner's note of its records' bucket").
//
// recordFunction is that code, shared by record-outcomes and trim-many so
// that the two cannot drift: record(done, now_ms, max, keep, from, to,
// hint) writes the id/record pairs ARGV[from..to] under the index done,
// keeping at most max records for keep ms, into the bucket hint names
// ({name, expiry, held}, or nil) when it may, and returns the bucket it
// wrote last: its name, expiry and records held.
const recordFunction = `local function rotate(done, now_ms, max, per)
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
`

// recordOutcomesSource keeps outcome records of finished jobs.
//
//	KEYS[1] done (the bucket index)
//	ARGV[1] the most records the queue keeps (> 0)
//	ARGV[2] how long to keep the records, in ms (> 0)
//	then 2 per record: id, record JSON
//
// Returns the number of records written.
const recordOutcomesSource = "-- drover record-outcomes v3\n" + recordFunction + `local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
record(KEYS[1], now_ms, tonumber(ARGV[1]), tonumber(ARGV[2]), 3, #ARGV)
return (#ARGV - 2) / 2
`

// jobStatusSource reads everything one job's status needs, in one call:
// where the id sits (delayed set, log, dead letters, outcome record buckets,
// newest first) and the stored envelope or record.
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] delayed  KEYS[4] dead  KEYS[5] deadmsg
//	KEYS[6] done (the bucket index)
//	ARGV[1] id
//	ARGV[2] the committed offset: "ahead" counts log entries after it
//
// Returns {now in µs, due ms or false, position or false, ahead,
// envelope or false, dead-lettered ms or false, dead record or false,
// outcome record or false}.
const jobStatusSource = `-- drover job-status v1
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
`

// retrySource stores a message's new envelope under its id and schedules it
// in the delayed set; the id leaves the log, so that a crash before the
// offset is committed does not run it from its old position as well.
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] delayed
//	ARGV[1] id  ARGV[2] envelope JSON  ARGV[3] due time, unix ms
//
// Returns 1.
const retrySource = `-- drover retry v1
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
`

// killSource moves a message to the dead letters: the record goes to
// :deadmsg, the id to :dead, and the id leaves the log, the delayed set and
// :msg, with its recorded starts (the field <id>\0a; also in the old
// layout's :attempts): a dead letter retried starts its attempts again.
// Its :seen entry stays (the dedupe window still holds).
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] delayed  KEYS[4] dead  KEYS[5] deadmsg
//	KEYS[6] attempts (the old layout's starts)
//	ARGV[1] id  ARGV[2] dead-letter record JSON  ARGV[3] failed at, unix ms
//
// Returns 1.
const killSource = `-- drover kill v3
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[5], ARGV[1], ARGV[2])
redis.call('HDEL', KEYS[2], ARGV[1], ARGV[1] .. '\0a')
redis.call('ZREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[6], ARGV[1])
return 1
`

// retryDeadSource re-enqueues a dead letter at the end of the log, bypassing
// the dedupe window (the id is known on purpose), and removes it from the
// dead letters.
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] seq  KEYS[4] dead  KEYS[5] deadmsg
//	KEYS[6] owner
//	ARGV[1] id  ARGV[2] envelope JSON (attempt 0)
//	ARGV[3] the channel for a queue without an owner (the wake-up goes to
//	        the channel the :owner key names, or to this one); "": none
//	ARGV[4] queue name
//
// Returns the new position, -1 if the id is not a dead letter, -2 if the id
// is pending in the queue again (nothing is changed then).
const retryDeadSource = `-- drover retry-dead v3
if not redis.call('ZSCORE', KEYS[4], ARGV[1]) then return -1 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return -2 end
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
local pos = math.max(now_us, last + 1)
redis.call('ZADD', KEYS[1], pos, ARGV[1])
redis.call('SET', KEYS[3], pos)
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('HDEL', KEYS[5], ARGV[1])
if ARGV[3] ~= '' then
  redis.call('PUBLISH', redis.call('GET', KEYS[6]) or ARGV[3], ARGV[4])
end
return pos
`

// purgeDeadSource deletes one dead letter, or all of a queue's.
//
//	KEYS[1] dead  KEYS[2] deadmsg
//	ARGV[1] id, or "" for all
//
// Returns the number of dead letters deleted.
const purgeDeadSource = `-- drover purge-dead v1
if ARGV[1] == '' then
  local n = redis.call('ZCARD', KEYS[1])
  redis.call('DEL', KEYS[1], KEYS[2])
  return n
end
local n = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return n
`

// trimSource removes done messages: log entries at or below a bound, their
// envelopes and their recorded starts (the fields <id> and <id>\0a of :msg),
// except those of ids in the delayed set (a retry waiting for its turn). An
// id that was promoted again sits above the bound and is not touched. It
// also forgets up to 1000 expired dedupe ids (a trim-many does only when
// asked: see trimFunction).
//
//	KEYS[1] log  KEYS[2] msg  KEYS[3] delayed  KEYS[4] seen
//	KEYS[5] the retire index (optional; see retireIndexFunction)
//	ARGV[1] offset: only positions at or below it are removed
//	ARGV[2] retention in µs ("0": none); when set, only positions older
//	        than now - retention are removed as well
//	ARGV[3] the most entries to remove in this call (> 0)
//
// Returns the number of log entries removed.
const trimSource = `-- drover trim v5
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)
` + chunkedFunction + trimFunction + retireIndexFunction + `local n, emptied = trim(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), true, KEYS[5] ~= nil)
if KEYS[5] and emptied then note_emptied(KEYS[5], KEYS[1]) end
return n
`

// trimFunction is the trim of one queue, shared by trim and trim-many so
// that the two cannot drift: trim(log, msg, delayed, seen, bound,
// retention, chunk, sweep) does what trimSource's doc says with those keys
// and arguments, and returns the number of log entries removed and whether
// that emptied the log; it forgets expired dedupe ids of seen only when
// sweep is true (docs/decisions.md, "Issue 43: a message's starts beside
// its envelope, the dedupe sweep one trim in ten": the owner asks for it
// in about one trim in ten, not at every trim). It reads the ids at or
// below the bound, at most chunk, without their positions (a position
// read costs Redis a '%.17g' conversion and Lua a parse), and, when
// noting is true (the caller notes an emptied log in the retire index),
// the log's ZCARD, to say whether it left the log empty (docs/decisions.md,
// "Issue 43: positions handed to Redis as text"). A message's envelope and
// its recorded starts go in one HDEL. It reads now_us and now_ms, which
// the script sets first, and calls chunked.
const trimFunction = `local function trim(log, msg, delayed, seen, bound, retention, chunk, sweep, noting)
  if retention > 0 then bound = math.min(bound, now_us - retention - 1) end
  if sweep then
    local old = redis.call('ZRANGE', seen, '-inf', now_ms, 'BYSCORE', 'LIMIT', 0, 1000)
    if #old > 0 then redis.call('ZREM', seen, unpack(old)) end
  end
  if bound < 1 then return 0, false end -- positions are > 0
  local upto = bound < 9007199254740992 and string.format('%d', bound) or '+inf' -- '%d' of 2^63 or more is undefined
  local ids = redis.call('ZRANGE', log, '-inf', upto, 'BYSCORE', 'LIMIT', 0, chunk)
  if #ids == 0 then return 0, false end
  local emptied = noting and redis.call('ZCARD', log) == #ids
  local check = redis.call('ZCARD', delayed) > 0
  local gone = {}
  for i = 1, #ids do
    if not check or not redis.call('ZSCORE', delayed, ids[i]) then
      gone[#gone + 1] = ids[i]
      gone[#gone + 1] = ids[i] .. '\0a'
    end
  end
  chunked('ZREM', log, ids, 1000)
  chunked('HDEL', msg, gone, 2000)
  return #ids, emptied
end
`

// retireIndexFunction is note_emptied(index, log): the one addition of the
// retire index to the trims (docs/decisions.md, "Issue 40: the retire
// sweep visits the emptied queues"), kept apart from trimFunction. Called
// after a trim that removed entries and left the log empty (trim says
// so), it adds the queue to the index, scored by now (unix ms): the family
// retire sweep then visits only such queues instead of every registered
// one. Cost: one ZADD per trim that emptied the log; nothing per enqueue.
// It reads now_ms. The queue's name is the log key's hash tag (a queue
// name holds no braces).
const retireIndexFunction = `local function note_emptied(index, log)
  redis.call('ZADD', index, now_ms, string.match(log, '{([^{}]*)}:log$'))
end
`

// chunkedFunction is chunked(cmd, key, list, n): the command cmd on key
// with the items of list as its arguments, n at a time (Lua's unpack and
// Redis's argument count bound one call).
const chunkedFunction = `local function chunked(cmd, key, list, n)
  for i = 1, #list, n do
    redis.call(cmd, key, unpack(list, i, math.min(i + n - 1, #list)))
  end
end
`

// trimManySource is recordOutcomesSource and trimSource for many queues in
// one call: an owner's committer trims the queues of a commit flush with it
// (Log.TrimMany), one TIME and one script call for up to 64 queues rather
// than two script calls and two TIMEs per queue. Each queue's records are
// written before its trim, as TrimRecording does. The queues of one call
// share a slot on a Cluster.
//
// A queue's records may also come staged (Log.TrimMany): whole buckets'
// worth written by the caller with a plain HSET to <done>:staged:<token>
// (a record costs Redis a fifth of what it costs as script arguments),
// which adopt makes new buckets by RENAME, as record makes a bucket when
// the current one is full: rotation, expiry and index alike. A staged key
// that is gone (its minute-long expiry passed) is skipped.
//
//	KEYS: 5 per queue: log, msg, delayed, seen, done; then, optionally,
//	      the retire index (see retireIndexFunction)
//	ARGV: per queue: offset, retention in µs, chunk (0: write the records
//	      and leave the log), the most records kept, how long to keep them
//	      in ms, "1" to forget expired dedupe ids (else "0"), k (the number
//	      of records), s (the number of staged buckets), then s staging
//	      tokens (oldest first), then 2k values: id, record JSON, then
//	      the owner's note of its records' bucket: name ("" for none),
//	      expiry in unix ms, records held (see recordFunction)
//
// Returns 4 values per queue: the number of log entries removed (a queue
// that reaches its chunk is trimmed further by the caller), and the bucket
// its records went to last: name ("" when it wrote none), expiry, records
// held.
const trimManySource = `-- drover trim-many v10
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)
` + recordFunction + `local function adopt(done, max, keep, from, to)
  local width = math.max(1000, math.floor(keep / 8))
  local per = math.max(1, math.floor(max / 8))
  local n = 0
  local cur = redis.call('ZRANGE', done, -1, -1)
  if #cur > 0 then n = tonumber(string.match(cur[1], '^(%d+):')) end
  for i = from, to do
    local staged = done .. ':staged:' .. ARGV[i]
    if redis.call('EXISTS', staged) == 1 then
      rotate(done, now_ms, max, per)
      n = n + 1
      local made = string.format('%012d:%d', n, now_ms)
      local key = done .. ':' .. made
      redis.call('RENAME', staged, key)
      index(done, key, made, now_ms + width + keep)
    end
  end
end
` + chunkedFunction + trimFunction + retireIndexFunction + `local index = (#KEYS % 5 == 1) and KEYS[#KEYS] or nil
local out = {}
local a, q = 1, 0
while a <= #ARGV do
  local k = 5 * q
  q = q + 1
  local n, s = tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
  local h = a + 8 + s + 2 * n -- the note of the bucket
  if s > 0 then adopt(KEYS[k + 5], tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), a + 8, a + 7 + s) end
  local name, expiry, held = '', 0, 0
  if n > 0 then
    local hint = nil
    if s == 0 and ARGV[h] ~= '' then hint = {ARGV[h], ARGV[h + 1], ARGV[h + 2]} end
    name, expiry, held = record(KEYS[k + 5], now_ms, tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), a + 8 + s, a + 7 + s + 2 * n, hint)
  end
  local removed = 0
  if tonumber(ARGV[a + 2]) > 0 then
    local emptied
    removed, emptied = trim(KEYS[k + 1], KEYS[k + 2], KEYS[k + 3], KEYS[k + 4], tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2]), ARGV[a + 5] == '1', index ~= nil)
    if index and emptied then note_emptied(index, KEYS[k + 1]) end
  end
  out[#out + 1] = removed
  out[#out + 1] = name
  out[#out + 1] = expiry
  out[#out + 1] = held
  a = h + 3
end
return out
`

// recordManySource writes the outcome records of many queues that have
// nothing else to do in the call: the records-only requests of a commit
// flush (Log.TrimMany), which a busy key sends once per message. trim-many
// did the same with five keys and eleven more arguments a queue, every one
// of which Redis makes a Lua string (about a quarter of a records-only
// queue's cost in the script: docs/decisions.md, "Issue 43: records-only
// requests in a call of their own"). The queues of one call share a slot
// on a Cluster.
//
//	KEYS: 1 per queue: done (the bucket index)
//	ARGV: per queue: the most records kept, how long to keep them in ms, k
//	      (the number of records), then 2k values: id, record JSON, then
//	      the owner's note of its records' bucket: name ("" for none),
//	      expiry in unix ms, records held (see recordFunction)
//
// Returns 3 values per queue: the bucket its records went to last: name,
// expiry, records held.
const recordManySource = `-- drover record-many v2
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
` + recordFunction + `local out = {}
local a = 1
for q = 1, #KEYS do
  local n = tonumber(ARGV[a + 2])
  local h = a + 3 + 2 * n -- the note of the bucket
  local hint = nil
  if ARGV[h] ~= '' then hint = {ARGV[h], ARGV[h + 1], ARGV[h + 2]} end
  local name, expiry, held = record(KEYS[q], now_ms, tonumber(ARGV[a]), tonumber(ARGV[a + 1]), a + 3, h - 1, hint)
  out[#out + 1] = name
  out[#out + 1] = expiry
  out[#out + 1] = held
  a = h + 3
end
return out
`

// recordNotedSource writes the outcome records of many queues into the
// buckets their owner's notes name, with nothing else: the records-only
// requests of a commit flush whose note the caller has checked already
// (Log.TrimMany: the bucket not full with these records, its expiry
// inside the retention window by the producer's estimate of Redis's
// clock, with a margin), which a busy key sends once per message. It is
// recordFunction's noted write alone: one HSET with the bucket's marker,
// and, when the marker was not there, PTTL to tell a bucket written by a
// note for the first time (it has its expiry) from one deleted since and
// made again by this HSET without one, which is deleted at once (in the
// same call: nothing is left without an expiry) and answered 0, so that
// the caller writes those records again with no note. A record-many call
// gave Redis eight strings and a dozen Lua steps a queue to do the same
// (docs/decisions.md, "Issue 43: noted records without the record
// function"). The queues of one call share a slot on a Cluster.
//
//	KEYS: 1 per queue: the noted bucket (<done>:<name>)
//	ARGV: per queue: k (the number of records, ids distinct), then 2k
//	      values: id, record JSON
//
// Returns 1 per queue: 1 when its records were written into the bucket,
// 0 when the bucket was gone (nothing written).
const recordNotedSource = `-- drover record-noted v1
local out = {}
local a = 1
for q = 1, #KEYS do
  local k = tonumber(ARGV[a])
  local added = redis.call('HSET', KEYS[q], '', '', unpack(ARGV, a + 1, a + 2 * k))
  if added == k or redis.call('PTTL', KEYS[q]) > 0 then
    out[q] = 1
  else
    redis.call('UNLINK', KEYS[q]) -- gone since the note: not kept without an expiry
    out[q] = 0
  end
  a = a + 1 + 2 * k
end
return out
`

// backlogSource measures a queue after an offset, in time independent of
// the backlog's size (ZCOUNT and ZCARD are O(log N) and O(1)).
//
//	KEYS[1] log  KEYS[2] delayed  KEYS[3] dead
//	ARGV[1] the exclusive lower bound, "(<offset>"
//
// Returns {lag, first position after the offset (0 if none), Redis time in
// µs, delayed count, dead count}.
const backlogSource = `-- drover backlog v1
local lag = redis.call('ZCOUNT', KEYS[1], ARGV[1], '+inf')
local first = 0
if lag > 0 then
  local r = redis.call('ZRANGE', KEYS[1], ARGV[1], '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
  if #r > 0 then first = tonumber(r[2]) end
end
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
return {lag, first, now_us, redis.call('ZCARD', KEYS[2]), redis.call('ZCARD', KEYS[3])}
`

// backlogManySource is backlogSource for many queues in one call (the
// queues of one call share a slot on a Cluster): the worker's backlog
// gauges of every queue that parked since its last round trip. One TIME a
// call, not one a queue, and no script call a queue: a queue with no lag
// costs ZCOUNT and two ZCARDs (docs/decisions.md, "Issue 43: the backlog
// gauges in one call").
//
//	KEYS: 3 per queue: log, delayed, dead
//	ARGV: 1 per queue: the exclusive lower bound, "(<offset>"
//
// Returns Redis time in µs, then 4 integers per queue: lag, first position
// after the offset (0 if none), delayed count, dead count.
const backlogManySource = `-- drover backlog-many v1
local t = redis.call('TIME')
local out = {tonumber(t[1]) * 1000000 + tonumber(t[2])}
for i = 1, #ARGV do
  local log = KEYS[3 * i - 2]
  local lag = redis.call('ZCOUNT', log, ARGV[i], '+inf')
  local first = 0
  if lag > 0 then
    local r = redis.call('ZRANGE', log, ARGV[i], '+inf', 'BYSCORE', 'LIMIT', 0, 1, 'WITHSCORES')
    if #r > 0 then first = tonumber(r[2]) end
  end
  out[#out + 1] = lag
  out[#out + 1] = first
  out[#out + 1] = redis.call('ZCARD', KEYS[3 * i - 1])
  out[#out + 1] = redis.call('ZCARD', KEYS[3 * i])
end
return out
`

// checkSource is the owner's amortised check of many queues at once: for
// each, whether its log holds an entry after an offset, whether it still
// holds one at or before it (committed and not trimmed: a claim's check
// owes the trim then, docs/decisions.md, "Issue 43: a claimed queue's
// untrimmed log is trimmed by its new owner"), and when its earliest
// delayed message is due. The queues of one call share a slot on a
// Cluster.
//
//	KEYS: 2 per queue: log, delayed
//	ARGV: 1 per queue: the exclusive lower bound, "(<offset>"
//
// Returns 2 integers per queue: 1 if an entry follows the offset, plus 2 if
// an entry lies at or before it; the earliest due time in unix ms (0:
// nothing delayed). The log's first entry answers both for an empty log
// and one whose entries all follow the offset (the common cases): one
// ZRANGE a queue, as in v1; a second only when that entry is at or before
// the offset.
const checkSource = `-- drover check v2
local out = {}
for i = 1, #ARGV do
  local log = KEYS[2 * i - 1]
  local head = redis.call('ZRANGE', log, 0, 0, 'WITHSCORES')
  local v = 0
  if #head > 0 then
    if tonumber(head[2]) > tonumber(string.sub(ARGV[i], 2)) then
      v = 1
    else
      v = 2
      if #redis.call('ZRANGE', log, ARGV[i], '+inf', 'BYSCORE', 'LIMIT', 0, 1) > 0 then v = 3 end
    end
  end
  out[#out + 1] = v
  local d = redis.call('ZRANGE', KEYS[2 * i], 0, 0, 'WITHSCORES')
  out[#out + 1] = (#d > 0) and tonumber(d[2]) or 0
end
return out
`

// The compiled scripts; redis.Script carries the SHA1 for EVALSHA.
var (
	enqueueScript         = redis.NewScript(enqueueSource)
	enqueueAdmittedScript = redis.NewScript(enqueueAdmittedSource)
	enqueueOneScript      = redis.NewScript(enqueueOneSource)
	enqueueManyScript     = redis.NewScript(enqueueManySource)
	enqueueSpreadScript   = redis.NewScript(enqueueSpreadSource)
	readAfterScript       = redis.NewScript(readAfterSource)
	readManyScript        = redis.NewScript(readManySource)
	promoteScript         = redis.NewScript(promoteSource)
	revokeScript          = redis.NewScript(revokeSource)
	retryScript           = redis.NewScript(retrySource)
	killScript            = redis.NewScript(killSource)
	retryDeadScript       = redis.NewScript(retryDeadSource)
	purgeDeadScript       = redis.NewScript(purgeDeadSource)
	trimScript            = redis.NewScript(trimSource)
	trimManyScript        = redis.NewScript(trimManySource)
	recordManyScript      = redis.NewScript(recordManySource)
	recordNotedScript     = redis.NewScript(recordNotedSource)
	backlogScript         = redis.NewScript(backlogSource)
	backlogManyScript     = redis.NewScript(backlogManySource)
	checkScript           = redis.NewScript(checkSource)

	recordOutcomesScript = redis.NewScript(recordOutcomesSource)
	jobStatusScript      = redis.NewScript(jobStatusSource)
)
