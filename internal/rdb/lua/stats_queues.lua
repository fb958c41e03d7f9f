-- stats_queues.lua sums up some queues of one shard.
--
-- KEYS[i] -> {P:s}:q:<webhook i>
-- ARGV[1] -> now (ms)
-- ARGV[2] -> end of the lease window (ms): a delivery leased now has its lease end at most there
-- ARGV[3] -> how many ids of deliveries in the lease window to return, at most
-- returns {due, total, oldest due (ms, 0 if none), deliveries in the lease window, queues not empty,
-- ids in the window...}
local nowArg, horizon, room = ARGV[1], ARGV[2], tonumber(ARGV[3])
local now = tonumber(nowArg)
local due, total, oldest, window, held = 0, 0, 0, 0, 0
local ids = {}
for i = 1, #KEYS do
  local q = KEYS[i]
  local n = redis.call('ZCARD', q)
  total = total + n
  if n > 0 then held = held + 1 end
  due = due + redis.call('ZCOUNT', q, '-inf', nowArg)
  local first = redis.call('ZRANGE', q, 0, 0, 'WITHSCORES')
  if first[2] then
    local at = tonumber(first[2])
    if at <= now and (oldest == 0 or at < oldest) then oldest = at end
  end
  local w = redis.call('ZCOUNT', q, '(' .. nowArg, horizon)
  window = window + w
  if w > 0 and #ids < room then
    for _, id in ipairs(redis.call('ZRANGEBYSCORE', q, '(' .. nowArg, horizon, 'LIMIT', 0, room - #ids)) do
      ids[#ids + 1] = id
    end
  end
end
local reply = {due, total, oldest, window, held}
for _, id in ipairs(ids) do reply[#reply + 1] = id end
return reply
