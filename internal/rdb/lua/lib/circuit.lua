-- lib/circuit.lua decodes (nil: missing or corrupt) and encodes a webhook's circuit as Go does
-- (internal/breaker): "failures:since:openUntil:openFor:probeUntil:lastOK:lastFailed:f1,f2,...:token". In the
-- table c[1] to c[5] are the first five, c[6] the token, c[7] lastOK, c[8] lastFailed and c[9] the
-- failures' answer times, ascending (at most {{MaxBreakAfter}}).
local function decode(v)
  local m = {string.match(v or '', '^(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):(%d+):([%d,]*):(.*)$')}
  if #m ~= 9 then return nil end
  for i = 1, 7 do if #m[i] > 15 then return nil end end
  local fails, parts = {}, {}
  for f in string.gmatch(m[8], '%d+') do
    if #parts >= {{MaxBreakAfter}} or #f > 15 then return nil end
    parts[#parts + 1], fails[#fails + 1] = f, tonumber(f)
  end
  if table.concat(parts, ',') ~= m[8] then return nil end -- digits, one comma between
  return {tonumber(m[1]), tonumber(m[2]), tonumber(m[3]), tonumber(m[4]), tonumber(m[5]), m[9],
    tonumber(m[6]), tonumber(m[7]), fails}
end
local function encode(c)
  local fails = {}
  for i, f in ipairs(c[9]) do fails[i] = string.format('%d', f) end
  return string.format('%d:%d:%d:%d:%d:%d:%d:', c[1], c[2], c[3], c[4], c[5], c[7], c[8]) ..
    table.concat(fails, ',') .. ':' .. c[6]
end
