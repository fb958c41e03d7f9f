-- reserve_order.lua reserves an event id for its order key: it writes the marker in the id's own
-- shard when the id's body key is empty, and extends a marker of the same key (new targets of the
-- event are claimed after it).
--
-- KEYS[1] -> {P:s}:evt:<event_id>
-- ARGV[1] -> the marker ("\x00" + order key)
-- ARGV[2] -> its TTL (ms): Retention + markerSlack
-- returns 1 when the id is the key's, else what the body key holds (another key's marker, or the
-- body of an unordered dispatch)
--#include extend
local v = redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2], 'NX', 'GET')
if not v then return 1 end
if v ~= ARGV[1] then return v end
extend(KEYS[1], tonumber(ARGV[2]), 0)
return 1
