-- lib/store_event.lua is storeEvent(key, stored, value, ttl, keep, reply): when keep (the claim created,
-- or recognised as its own, at least one pair; or the replay index wants every event), the event is
-- stored under key for ttl (ms: the records' retention, or Options.PayloadRetention when shorter)
-- unless it was (stored: then reply[1] is it, and the key lives at least ttl more). It returns true
-- when it stored the event now.
local function storeEvent(key, stored, value, ttl, keep, reply)
  if not keep then return false end
  if stored then
    reply[1] = stored
    extend(key, ttl, 0)
    return false
  end
  redis.call('SET', key, value, 'PX', ttl)
  return true
end
