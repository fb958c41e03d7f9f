-- del_if_equal.lua deletes a key only if it holds the given value: a lock released by its holder only,
-- a token dropped only if no replica has replaced it meanwhile.
--
-- KEYS[1] -> the key ({P:oauth:<webhook_id>} or its :lock)
-- ARGV[1] -> the value it must hold
-- returns 1 when deleted, else 0
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
