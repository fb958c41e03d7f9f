-- find_duplicates.lua answers, without the claim's arguments, a call for an event whose every target
-- was claimed before: when the event stored under KEYS[1] is this event (it begins with this event's
-- mark and fingerprint) and every target has its record, it returns what claim.lua returns for
-- duplicates; else 0, and the caller runs claim.lua, which decides every other case (a new target, an
-- expired record, another event under the id, an ordered event's marker). It writes nothing. All keys
-- share the event's shard tag.
--
-- KEYS[1] -> {P:s}:evt:<event_id>
-- KEYS[1+i] (i = 1..n) -> target i's delivery key
-- ARGV[1] -> how the event as stored begins: EventMark, then its fingerprint (StoredEvent)
-- returns 0, or {false, record_1, ..., record_n}
if redis.call('GETRANGE', KEYS[1], 0, #ARGV[1] - 1) ~= ARGV[1] then return 0 end
local recs = redis.call('MGET', unpack(KEYS, 2))
local reply = {false}
for i, rec in ipairs(recs) do
  if not rec then return 0 end
  reply[i + 1] = rec
end
if #reply ~= #KEYS then return 0 end
return reply
