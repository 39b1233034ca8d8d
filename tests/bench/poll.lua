-- tests/bench/poll.lua - wrk script: GET a random execution listed in a bench_seed data
-- file (consumer key, path prefix, {correlationId, pollToken} items).
--   wrk -t2 -c64 -d10s --latency -s poll.lua http://127.0.0.1:PORT -- DATAFILE
-- Also drives the hello and select probes, so that wrk does the same work for them.
local counter = 0

function setup(thread)
   thread:set("tid", counter)
   counter = counter + 1
end

local items, n, prefix, headers

function init(args)
   local data = dofile(args[1])
   items = data.items
   n = #items
   if n == 0 then
      error("no items in " .. args[1])
   end
   prefix = data.path
   headers = { ["Authorization"] = "Bearer " .. data.key }
   math.randomseed(os.time() * 1000 + (tid or 0) * 7919)
end

function request()
   local it = items[math.random(n)]
   headers["X-Poll-Token"] = it[2]
   return wrk.format("GET", prefix .. it[1], headers)
end
