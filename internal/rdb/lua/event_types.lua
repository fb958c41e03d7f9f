-- event_types.lua reads the catalog of event types, unless the caller holds its current version: a
-- process's cache of the catalog costs one small reply per refresh while the catalog is unchanged.
--
-- KEYS[1] -> {P:registry}:event_types
-- KEYS[2] -> {P:registry}:event_types:version
-- ARGV[1] -> the version the caller holds ("" for none)
-- returns {version} when the caller holds it, else {version, name, JSON, name, JSON, ...}; version is ""
-- for a catalog never written (its entries, if any, are then always returned)
local v = redis.call('GET', KEYS[2]) or ''
if v ~= '' and v == ARGV[1] then return {v} end
local out = redis.call('HGETALL', KEYS[1])
table.insert(out, 1, v)
return out
