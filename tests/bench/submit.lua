-- tests/bench/submit.lua - wrk script: POST a small JSON body to a submit path, without
-- X-Correlation-Id (the server generates one per request).
--   wrk -t2 -c64 -d10s --latency -s submit.lua http://127.0.0.1:PORT -- DATAFILE
-- DATAFILE lines: "key AK", "path /v1/executions/ENV/SVC/OP".
-- Also drives the insert probe, so that wrk does the same work for it. The request is
-- formatted per request (not once, as wrk does for static requests) so that wrk spends
-- about as much per request as for poll.lua and complete.lua.
local load = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") ..
   "bench_data.lua")
local path, headers, body

function init(args)
   local data = load(args[1])
   path = data.path
   if not data.key or not path then
      error("submit.lua: no key or path in " .. args[1])
   end
   headers = { ["Authorization"] = "Bearer " .. data.key,
               ["Content-Type"] = "application/json" }
   body = '{"bench":"submit","payload":{"a":1,"b":"two","c":[3,4,5]}}'
end

function request()
   return wrk.format("POST", path, headers, body)
end
