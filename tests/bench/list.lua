-- tests/bench/list.lua - wrk script: GET the first page (limit 20) of the listing of the
-- key and route in a bench_seed data file (lines "key AK", "path /v1/executions/ENV/SVC/OP/").
--   wrk -t2 -c64 -d10s --latency -s list.lua http://127.0.0.1:PORT -- DATAFILE
-- scripts/bench.sh runs it before and after the filler rows, which share the listed key's
-- lineage and route: the page must cost the same with millions of rows behind it.
local req

function init(args)
   local key, path
   for line in io.lines(args[1]) do
      local k, a = line:match("^(%S+) (%S+)")
      if k == "key" then key = a elseif k == "path" then path = a end
   end
   if not key or not path then
      error("list.lua: no key or path in " .. args[1])
   end
   req = wrk.format("GET", path:gsub("/$", "") .. "?limit=20",
      { ["Authorization"] = "Bearer " .. key })
end

function request()
   return req
end
