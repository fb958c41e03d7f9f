package webhooks

import "strconv"

// Lua preludes shared by the scripts. Each is a local function spliced in front of a script's body;
// the lease-state bytes and lengths come from the Go constants of record.go.

// luaLeaseOf is leaseOf(key, token): the lease state byte ('L' held, '+' settled, '-' none) of the
// record at key when its head names token, false when the head names another token or the key is
// missing.
var luaLeaseOf = `
local function leaseOf(key, token)
  local head = redis.call('GETRANGE', key, 0, ` + strconv.Itoa(tokenLen) + `)
  if string.sub(head, 1, ` + strconv.Itoa(tokenLen) + `) ~= token then return false end
  return string.sub(head, ` + strconv.Itoa(tokenLen+1) + `)
end
`

// luaExtend is extend(key, ttl, slack): sets key's TTL to ttl + slack (ms) when it is shorter than ttl,
// so most writes leave a TTL as it is.
const luaExtend = `
local function extend(key, ttl, slack)
  if redis.call('PTTL', key) < ttl then redis.call('PEXPIRE', key, ttl + slack) end
end
`

// luaRetime is retime(ready, queue, wid): sets the webhook's entry in the shard's ready zset to its
// queue's earliest score, or removes it when the queue is empty, and returns that score ("" when
// removed). It undoes a park: a worker that finds the webhook blocked parks it again.
const luaRetime = `
local function retime(ready, queue, wid)
  local first = redis.call('ZRANGE', queue, 0, 0, 'WITHSCORES')
  if first[2] then redis.call('ZADD', ready, first[2], wid) return first[2] end
  redis.call('ZREM', ready, wid)
  return ''
end
`

// Lease states as Lua string literals.
var (
	luaHeld    = "'" + string(rune(leaseHeld)) + "'"
	luaSettled = "'" + string(rune(leaseSettled)) + "'"
	luaNone    = "'" + string(rune(leaseNone)) + "'"
)
