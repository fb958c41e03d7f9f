-- save_webhook.lua replaces a webhook in the registry, conditional on the stored JSON being what the
-- caller read (the token of this read-modify-write). The webhook's JSON is stored once, in the
-- registry; each subscription hash it joins, and its tenant's index, get its id only (so a webhook
-- costs Redis its size, not its size per pattern). A new webhook of a tenant is refused when
-- the tenant's index already holds the quota. A webhook enabled again (ARGV[7]) loses its circuit: its
-- run of failures, and its open period, began before it was disabled.
--
-- KEYS[1] -> {P:registry}:webhooks
-- KEYS[2] -> {P:registry}:circuits
-- KEYS[3..2+ARGV[4]] -> hashes the webhook leaves (its old patterns' subscription hashes)
-- KEYS[3+ARGV[4]..#KEYS-ARGV[6]] -> subscription hashes the webhook joins (its new patterns', when enabled)
-- KEYS[#KEYS] -> its tenant's index, when ARGV[6] is 1
-- ARGV[1] -> webhook id
-- ARGV[2] -> expected stored JSON ("" when the webhook must not exist yet)
-- ARGV[3] -> new JSON ("" deletes the webhook)
-- ARGV[4] -> number of subscription hashes left
-- ARGV[5] -> the quota of webhooks per tenant, checked when creating ("0": none)
-- ARGV[6] -> 1 when the last key is the tenant's index, else 0
-- ARGV[7] -> 1 when the save enables a webhook that was disabled, else 0
-- returns SaveDone when saved, SaveConflict when the stored JSON was not the expected one, SaveOverQuota
-- when a new webhook would exceed its tenant's quota
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if (cur or '') ~= ARGV[2] then return {{SaveConflict}} end
local tenant = ARGV[6] == '1' and KEYS[#KEYS]
if ARGV[2] == '' and ARGV[5] ~= '0' and redis.call('HLEN', tenant) >= tonumber(ARGV[5]) then
  return {{SaveOverQuota}}
end
local nold = tonumber(ARGV[4])
for i = 3, 2 + nold do redis.call('HDEL', KEYS[i], ARGV[1]) end
if ARGV[3] == '' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  if tenant then redis.call('HDEL', tenant, ARGV[1]) end
  return {{SaveDone}}
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
if ARGV[7] == '1' then redis.call('HDEL', KEYS[2], ARGV[1]) end
for i = 3 + nold, #KEYS - tonumber(ARGV[6]) do redis.call('HSET', KEYS[i], ARGV[1], '') end
if tenant then redis.call('HSET', tenant, ARGV[1], '') end
return {{SaveDone}}
