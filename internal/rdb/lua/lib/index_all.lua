-- indexAll(created, n, now, retention, keep, at, tenant, tenantCheck) appends an index entry (index)
-- for each pair i of 1..n that created[i] marks, its record expiring at now + retention, the indexes
-- kept keep (trimmed to it, and their TTL: Options.Retention, whatever the record's, so that a test
-- send's short-lived record cuts no index short); at(i) gives pair i's index key, its hash and whether
-- its key's TTL is to be checked. When tenant is a key (the tenant's index, Keys.TenantIndex; nil for the
-- webhooks of no tenant), each entry is appended there too, its TTL checked with the first when
-- tenantCheck is true. When an entry cannot be appended (an index key holding something else, Redis
-- older than 7.0) it deletes the entries it appended and returns the error; else it returns nil.
--#include index
local function indexAll(created, n, now, retention, keep, at, tenant, tenantCheck)
  local appended = {}
  local function add(key, hash, check)
    local ok, id = pcall(index, key, now, keep, hash, now + retention, check)
    if not ok then
      for _, e in ipairs(appended) do redis.call('XDEL', e[1], e[2]) end
      return id
    end
    appended[#appended + 1] = {key, id}
  end
  for i = 1, n do
    if created[i] then
      local key, hash, check = at(i)
      local err = add(key, hash, check)
      if not err and tenant then
        err = add(tenant, hash, tenantCheck)
        tenantCheck = false
      end
      if err then return err end
    end
  end
  return nil
end
