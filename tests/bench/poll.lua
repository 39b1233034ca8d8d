-- tests/bench/poll.lua - wrk script: GET a random execution listed in a bench_seed data
-- file (lines "key AK", "path /v1/executions/ENV/SVC/OP/", "item CORRELATION_ID POLL_TOKEN").
--   wrk -t2 -c64 -d10s --latency -s poll.lua http://127.0.0.1:PORT -- DATAFILE
-- Also drives the hello and select probes, so that wrk does the same work for them.
local counter = 0

function setup(thread)
   thread:set("tid", counter)
   counter = counter + 1
end

local load = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") ..
   "bench_data.lua")

local items, n, prefix, headers

function init(args)
   local data = load(args[1])
   items = data.items
   n = #items
   if n == 0 or not data.key or not data.path then
      error("poll.lua: no key, path or items in " .. args[1])
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
