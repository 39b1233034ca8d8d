-- tests/bench/list.lua - wrk script: GET the first page (limit 20) of the listing of the
-- key and route in a bench_seed data file (lines "key AK", "path /v1/executions/ENV/SVC/OP/").
--   wrk -t2 -c64 -d10s --latency -s list.lua http://127.0.0.1:PORT -- DATAFILE
-- scripts/bench.sh runs it before and after the filler rows, which share the listed key's
-- lineage and route: the page must cost the same with millions of rows behind it.
local load = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") ..
   "bench_data.lua")
local req

function init(args)
   local data = load(args[1])
   if not data.key or not data.path then
      error("list.lua: no key or path in " .. args[1])
   end
   req = wrk.format("GET", data.path:gsub("/$", "") .. "?limit=20",
      { ["Authorization"] = "Bearer " .. data.key })
end

function request()
   return req
end
