-- One namespace's reservation state, replaced only if nobody changed it since it was read
-- (RedisReservationStore): compare the stored version with the expected one, store the new
-- state and publish the change, atomically.
--   KEYS[1]  the state key (a string: the encoded state, its version first)
--   ARGV[1]  the version the change was computed from (0: no state yet)
--   ARGV[2]  the new state     ARGV[3]  the channel     ARGV[4]  the message
-- Returns 1 when stored, 0 when the version differed.
local current = redis.call('GET', KEYS[1])
local version = 0
if current then
  version = tonumber(string.match(current, '^(%d+)'))
end
if version ~= tonumber(ARGV[1]) then
  return 0
end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1
