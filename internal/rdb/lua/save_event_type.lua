-- save_event_type.lua writes one entry of the catalog of event types, conditional on the stored JSON
-- being what the caller read (the token of its read-modify-write), and gives the catalog a new
-- version: every process's cache of the catalog compares its version to learn that it changed.
--
-- KEYS[1] -> {P:registry}:event_types
-- KEYS[2] -> {P:registry}:event_types:version
-- ARGV[1] -> the type's name
-- ARGV[2] -> expected stored JSON ("" when the type must not exist yet)
-- ARGV[3] -> new JSON ("" deletes the type)
-- ARGV[4] -> the catalog's new version (random, never "")
-- ARGV[5] -> the most types the catalog may hold, checked when creating
-- ARGV[6] -> the most bytes the catalog's JSON may hold in all, checked when a type is written
-- returns SaveDone when saved, SaveConflict when the stored JSON was not the expected one, SaveOverQuota
-- when a new type would exceed the bound on types, SaveOverSize when the write would exceed the bound on
-- bytes (the sum of every type's JSON: at most MaxEventTypes reads of a length)
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur or '') ~= ARGV[2] then return {{SaveConflict}} end
if ARGV[2] == '' and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[5]) then return {{SaveOverQuota}} end
if ARGV[3] ~= '' then
  local total = #ARGV[3] - #(cur or '')
  for _, name in ipairs(redis.call('HKEYS', KEYS[1])) do total = total + redis.call('HSTRLEN', KEYS[1], name) end
  if total > tonumber(ARGV[6]) then return {{SaveOverSize}} end
end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
end
redis.call('SET', KEYS[2], ARGV[4])
return {{SaveDone}}
