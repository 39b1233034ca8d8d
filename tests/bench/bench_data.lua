-- tests/bench/bench_data.lua - the reader of bench_seed's data files that the wrk scripts
-- share (complete.lua, list.lua, poll.lua, submit.lua). Each loads it from its own folder:
--   local load = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") ..
--      "bench_data.lua")
-- (wrk gives a script no search path of its own: scripts/bench.sh names the scripts by
-- their path in the source tree). Returns load(FILE): a table { key = K, path = P,
-- items = { { A, B }, ... } } of the lines "key K", "path P" and "item A B" of FILE, in
-- order; other lines are passed over.
local function load(file)
   local d = { items = {} }
   for line in io.lines(file) do
      local k, a, b = line:match("^(%S+) (%S+) ?(%S*)$")
      if k == "key" then d.key = a
      elseif k == "path" then d.path = a
      elseif k == "item" then d.items[#d.items + 1] = { a, b }
      end
   end
   return d
end

return load
