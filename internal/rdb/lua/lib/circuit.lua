-- lib/circuit.lua decodes (nil: missing or corrupt) and encodes as Go does, and load reads a webhook's circuit.
local function decode(v)
  local c = {string.match(v or '', '^(%d+):(%d+):(%d+):(%d+):(%d+):(.*)$')}
  for i = 1, 5 do if #c ~= 6 or #c[i] > 15 then return nil end c[i] = tonumber(c[i]) end
  return c
end
local function encode(c) return string.format('%d:%d:%d:%d:%d:', c[1], c[2], c[3], c[4], c[5]) .. c[6] end
