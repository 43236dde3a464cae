-- One node's exchange with the store, atomic (Redis runs a script alone): for each tenant
-- key, record this node's demand, and answer its share of the key's global limit.
-- The algorithm is explained in io.iotarget.cluster's package documentation.
--   KEYS[i]          one hash per (group, device, limit); field = node id,
--                    value = "demand holds expires_ms": holds is the most the node may
--                    enforce until its next exchange (the larger of the share answered and
--                    the share it said it held: the answer may be late or lost)
--   ARGV[1..3]       node id, configured nodes, lease in ms
--   ARGV[4i..4i+3]   key i's global limit, this node's demand, the share it holds now, and
--                    the floor every configured node keeps; integers
-- Returns, per key, {share, known}: known is 1 when the key held a live entry for this node
-- before the call (0 after a start, an expiry, or a store that lost its data).
local node = ARGV[1]
local nodes = tonumber(ARGV[2])
local lease = tonumber(ARGV[3])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local out = {}
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[4 * i])
  local demand = tonumber(ARGV[4 * i + 1])
  local held = tonumber(ARGV[4 * i + 2])
  local floor = tonumber(ARGV[4 * i + 3])
  local wants = {{node = node, want = math.max(demand - floor, 0)}}
  local others = 0
  local known = 0
  local fields = redis.call('HGETALL', key)
  for j = 1, #fields, 2 do
    local d, h, e = string.match(fields[j + 1], '^(%d+) (%d+) (%d+)$')
    if d == nil or tonumber(e) <= now then
      redis.call('HDEL', key, fields[j])
    elseif fields[j] == node then
      known = 1
    else
      others = others + tonumber(h)
      wants[#wants + 1] = {node = fields[j], want = math.max(tonumber(d) - floor, 0)}
    end
  end
  -- Every configured node keeps its floor, live or not (one starting holds it until it has spoken).
  -- Above the floors, water-filling: the smallest wants are met first, the rest split evenly.
  table.sort(wants, function(a, b) return a.want < b.want end)
  local absent = math.max(nodes - #wants, 0)
  local rest = math.max(limit - (#wants + absent) * floor, 0)
  local mine = 0
  for k, w in ipairs(wants) do
    local give = math.min(w.want, math.floor(rest / (#wants - k + 1)))
    rest = rest - give
    if w.node == node then mine = give end
  end
  local target = floor + mine + math.floor(rest / #wants)
  local share = math.max(1, math.min(target, limit - others - absent * floor))
  redis.call('HSET', key, node, string.format('%d %d %d', demand, math.max(share, held), now + lease))
  redis.call('PEXPIRE', key, lease * 10)
  out[i] = {share, known}
end
return out
