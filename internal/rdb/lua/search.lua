-- search.lua reads one shard's index entries of several webhooks, newest first, merged by stream id:
-- at least ARGV[2] entries from a place (while there are so many), and then every entry whose stream
-- id equals the last one's, so that a stream id is never split between two calls (the caller orders
-- the entries of one stream id by delivery id). It reads each stream lazily, a few entries at a time,
-- with at most ARGV[3] XREVRANGE calls: once they are spent, it stops where a stream it may not read
-- on would be needed (after the entries of the last stream id examined), and says there is more.
--
-- KEYS[i] -> {P:s}:list:<webhook i>, one shard's
-- ARGV[1] -> where to start: "+" (the newest), "<ms>-<seq>" (that stream id and after) or
--            "(<ms>-<seq>" (after that stream id)
-- ARGV[2] -> how many entries to examine, at least (n >= 1), unless the reads run out first
-- ARGV[3] -> how many XREVRANGE calls to make, at most (>= #KEYS: each stream is read once first)
-- returns {more, last ms, last seq, calls, i, id, d, x, ...}: more is 1 when some stream has (or may
-- have) entries after the last examined; last ms and seq are the last examined stream id (0 0 for
-- none); calls the XREVRANGE calls made; then, for every
-- entry examined that has the fields d and x, the index i of its key, its stream id, d and x, newest
-- first.
local start, want, budget = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local chunk = math.max(2, math.min(want, math.ceil(2 * want / #KEYS)))
local bufs, at, full = {}, {}, {}
local calls, cut = 0, false -- cut: a stream was left unread for the budget

local function fill(i, from)
  calls = calls + 1
  local r = redis.call('XREVRANGE', KEYS[i], from, '-', 'COUNT', chunk)
  bufs[i], at[i], full[i] = r, 1, #r == chunk
end

-- head is key i's next entry as a heap node {ms, seq, i}, reading more of its stream when its
-- buffer is used up; nil when the stream has no more, or when the budget leaves it unread (cut).
local function head(i)
  if at[i] > #bufs[i] then
    if not full[i] then return nil end
    if calls >= budget then
      cut = true
      return nil
    end
    fill(i, '(' .. bufs[i][#bufs[i]][1])
    if #bufs[i] == 0 then return nil end
  end
  local ms, seq = string.match(bufs[i][at[i]][1], '^(%d+)%-(%d+)$')
  return {tonumber(ms), tonumber(seq), i}
end

-- heap is a binary heap of the streams' heads, the newest on top.
local heap = {}
local function newer(a, b) return a[1] > b[1] or (a[1] == b[1] and a[2] > b[2]) end
local function push(node)
  local j = #heap + 1
  heap[j] = node
  while j > 1 do
    local p = math.floor(j / 2)
    if not newer(heap[j], heap[p]) then break end
    heap[j], heap[p] = heap[p], heap[j]
    j = p
  end
end
local function pop()
  local top, n = heap[1], #heap
  heap[1] = heap[n]
  heap[n] = nil
  n = n - 1
  local j = 1
  while true do
    local l, r, m = 2 * j, 2 * j + 1, j
    if l <= n and newer(heap[l], heap[m]) then m = l end
    if r <= n and newer(heap[r], heap[m]) then m = r end
    if m == j then break end
    heap[j], heap[m] = heap[m], heap[j]
    j = m
  end
  return top
end

for i = 1, #KEYS do
  fill(i, start)
  local h = head(i)
  if h then push(h) end
end
local out, n, lastMs, lastSeq = {0, 0, 0, 0}, 0, 0, 0
while #heap > 0 do
  local top = heap[1]
  -- Once cut, a stream left unread may hold entries just after the last stream id (never one equal
  -- to it: a stream's ids only go down), so the merge stops after that stream id.
  if (n >= want or cut) and (top[1] ~= lastMs or top[2] ~= lastSeq) then break end
  pop()
  local i = top[3]
  local e = bufs[i][at[i]]
  at[i] = at[i] + 1
  n, lastMs, lastSeq = n + 1, top[1], top[2]
  local d, x
  local f = e[2]
  for j = 1, #f - 1, 2 do
    if f[j] == 'd' then d = f[j + 1] elseif f[j] == 'x' then x = f[j + 1] end
  end
  if d and x then
    local k = #out
    out[k + 1], out[k + 2], out[k + 3], out[k + 4] = i, e[1], d, x
  end
  local h = head(i)
  if h then push(h) end
end
if #heap > 0 or cut then out[1] = 1 end
out[2], out[3], out[4] = lastMs, lastSeq, calls
return out
