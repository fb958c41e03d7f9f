-- lib/lease_of.lua is leaseOf(key, token): the lease state byte ('L' held, '+' settled, '-' none) of the
-- record at key when its head names token, false when the head names another token or the key is
-- missing.
local function leaseOf(key, token)
  local head = redis.call('GETRANGE', key, 0, {{TokenLen}})
  if string.sub(head, 1, {{TokenLen}}) ~= token then return false end
  return string.sub(head, ({{TokenLen}} + 1))
end
