-- indexed_webhooks.lua reads the webhooks some index hashes name: the ids in the hashes (the
-- subscription hashes of an event type's patterns, or a tenant's index), each once, and their JSON
-- from the registry, in one round trip.
--
-- KEYS[1] -> {P:registry}:webhooks
-- KEYS[2..] -> index hashes: {P:registry}:sub:<pattern>, {P:registry}:t:<tenant>:sub:<pattern>, {P:registry}:t:<tenant>:all
-- returns the JSON of every webhook whose id one of the hashes holds and the registry still has
local seen, out = {}, {}
for i = 2, #KEYS do
  for _, id in ipairs(redis.call('HKEYS', KEYS[i])) do
    if not seen[id] then
      seen[id] = true
      local body = redis.call('HGET', KEYS[1], id)
      if body then out[#out + 1] = body end
    end
  end
end
return out
