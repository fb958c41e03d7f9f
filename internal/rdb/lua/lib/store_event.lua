-- lib/store_event.lua is storeEvent(key, stored, value, retention, keep, reply): when keep (the claim created,
-- or recognised as its own, at least one pair; or the replay index wants every event), the event is
-- stored under key for a retention unless it was (stored: then reply[1] is it, and the key lives at
-- least a retention more). It returns true when it stored the event now.
local function storeEvent(key, stored, value, retention, keep, reply)
  if not keep then return false end
  if stored then
    reply[1] = stored
    extend(key, retention, 0)
    return false
  end
  redis.call('SET', key, value, 'PX', retention)
  return true
end
