-- drover revoke v3
if redis.call('ZREM', KEYS[3], ARGV[1]) == 0 then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1], ARGV[1] .. '\0a')
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
if KEYS[5] then redis.call('HDEL', KEYS[5], ARGV[1]) end
return 1
