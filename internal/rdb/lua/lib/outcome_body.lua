-- lib/outcome_body.lua is outcome.lua's body, with three hooks: outcomeCount(), finish(reply), which makes
-- the reply, and final(i, status), called when outcome i leaves its delivery final, once its
-- schedule entry is gone.
--#include lease_of
--#include retime
--#include schedule
local n = outcomeCount()
local held = {}
for i = 1, n do
  held[i] = leaseOf(KEYS[2 * i + 1], ARGV[3 + 6 * (i - 1)])
end
local reply = {}
for i = 1, n do
  reply[i] = {{OutcomeLeaseLost}}
  if held[i] == '{{LeaseSettled}}' then reply[i] = {{OutcomeRecorded}} end
  if held[i] == '{{LeaseHeld}}' then
    local a = 1 + 6 * (i - 1)
    local member, status, next, wid = ARGV[a + 1], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
    redis.call('SET', KEYS[2 * i + 1], ARGV[1 + 6 * n + i], 'KEEPTTL')
    schedule(KEYS[1], KEYS[2], KEYS[2 * i + 2], member, wid, status, next, ARGV[a + 6])
    if status ~= 'pending' then final(i, status) end
    reply[i] = {{OutcomeRecorded}}
  end
end
return finish(reply)
