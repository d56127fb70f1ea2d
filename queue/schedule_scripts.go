package queue

import "github.com/redis/go-redis/v9"

// The schedule store's Lua scripts. Each touches a single key, so they run
// on Redis Cluster too.

// scheduleAdvanceScript is the compare-and-set on an entry's score: the
// leader moves an entry from the slot it fired to the next one only if no
// other scheduler (and no update) moved it meanwhile.
//
//	KEYS[1] the schedule index (ZSET)
//	ARGV[1] entry name
//	ARGV[2] the score the caller read (a number, "+inf" or "-inf")
//	ARGV[3] the new score
//
// Returns 1 when the score was ARGV[2] and is now ARGV[3]; 0, changing
// nothing, when the entry is gone or its score differs. Scores are compared
// as numbers (ZSCORE formats doubles with 17 significant digits and
// tonumber reads them back exactly, "inf" included).
var scheduleAdvanceScript = redis.NewScript(`-- drover schedule advance v1
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not cur then return 0 end
if tonumber(cur) ~= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1
`)

// scheduleRecordScript adds fires to an entry's meta. Records commute: the
// count always grows, last_fire/last_run_at only move forward, so two
// schedulers recording out of order keep the latest slot.
//
//	KEYS[1] the entry's hash
//	ARGV[1] number of slots fired
//	ARGV[2] the latest slot fired (Unix seconds)
//	ARGV[3] when it was fired (RFC 3339)
//
// Returns 1, or 0 (changing nothing) when the entry has no definition (it
// was removed): a late record must not leave a stray hash behind. Fields of
// meta the script does not know are kept.
var scheduleRecordScript = redis.NewScript(`-- drover schedule record v1
if redis.call('HEXISTS', KEYS[1], 'definition') == 0 then return 0 end
local raw = redis.call('HGET', KEYS[1], 'meta')
local m = {}
if raw then
  local ok, v = pcall(cjson.decode, raw)
  if ok and type(v) == 'table' then m = v end
end
m.total_run_count = (tonumber(m.total_run_count) or 0) + tonumber(ARGV[1])
if (tonumber(m.last_fire) or 0) < tonumber(ARGV[2]) then
  m.last_fire = tonumber(ARGV[2])
  m.last_run_at = ARGV[3]
end
redis.call('HSET', KEYS[1], 'meta', cjson.encode(m))
return 1
`)
