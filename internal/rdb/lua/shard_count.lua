-- shard_count reads the keyspace's stored shard count, storing ARGV[1] first when none is.
--
-- KEYS[1] -> {P:registry}:shards
-- ARGV[1] -> the count to store in a new keyspace (rdb.FormatCount)
-- returns the stored count
local v = redis.call('GET', KEYS[1])
if v then return v end
redis.call('SET', KEYS[1], ARGV[1])
return ARGV[1]
