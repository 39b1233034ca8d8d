-- tests/bench/claim.lua - wrk script: POST /v1/backend/{route}/claim {"max":1}, each
-- request taking the oldest waiting execution of the route (the executions the submit
-- measurement left there).
--   wrk -tT -c64 -d10s --latency -s claim.lua http://127.0.0.1:PORT -- BACKEND_KEY ROUTE
-- A claim that finds nothing answers 200 with an empty list: done() prints "overrun N"
-- with the number of such requests, which scripts/bench.sh counts as errors (the route
-- ran dry: the rate would be that of empty claims). overrun is a global of each thread's
-- Lua state, so that done() can read it through thread:get().
local threads = {}

function setup(thread)
   table.insert(threads, thread)
end

local headers, path, body
overrun = 0

function init(args)
   headers = { ["Authorization"] = "Bearer " .. args[1],
               ["Content-Type"] = "application/json" }
   path = "/v1/backend/" .. args[2] .. "/claim"
   body = '{"max":1,"leaseSeconds":3600}'
   overrun = 0
end

function request()
   return wrk.format("POST", path, headers, body)
end

function response(status, hdrs, resp)
   if status == 200 and resp:find('"executions":[]', 1, true) then
      overrun = overrun + 1
   end
end

function done(summary, latency, requests)
   local total = 0
   for _, t in ipairs(threads) do
      total = total + (t:get("overrun") or 0)
   end
   io.write(string.format("overrun %d\n", total))
end
