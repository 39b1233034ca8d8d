-- tests/bench/complete.lua - wrk script: POST /v1/callbacks/{id}/complete, each request
-- with a distinct claimed execution from a bench_seed "claimed" data file (lines "key BK",
-- "path /v1/callbacks/", "item ID CALLBACK_TOKEN").
--   wrk -tT -c64 -d10s --latency -s complete.lua http://127.0.0.1:PORT -- DATAFILE FIRST COUNT T
-- Items FIRST+1 .. FIRST+COUNT (FIRST counts from 0) are split evenly among the T wrk
-- threads; each thread walks its share in order. A thread that runs out repeats its last
-- item (the winner's repeat, which the service answers 200 again: wrk does not see it as
-- an error) and done() prints "overrun N" with the number of such requests, which
-- scripts/bench.sh counts as errors. overrun is a global of each thread's Lua state (not
-- a local), so that done() can read it through thread:get().
local counter = 0
local threads = {}

function setup(thread)
   thread:set("tid", counter)
   counter = counter + 1
   table.insert(threads, thread)
end

local load = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") ..
   "bench_data.lua")

local items, i, last, headers, body
overrun = 0

function init(args)
   local data = load(args[1])
   local first, count, nt = tonumber(args[2]), tonumber(args[3]), tonumber(args[4])
   local per = math.floor(count / nt)
   items = data.items
   i = first + tid * per + 1
   last = math.min(i + per - 1, #items)
   if per < 1 or i > last then
      error("complete.lua: not enough items for thread " .. tid)
   end
   headers = { ["Authorization"] = "Bearer " .. data.key,
               ["Content-Type"] = "application/json" }
   body = '{"result":{"bench":"complete","ok":true,"values":[1,2,3]}}'
   overrun = 0
end

function request()
   local it
   if i <= last then
      it = items[i]
      i = i + 1
   else
      it = items[last]
      overrun = overrun + 1
   end
   headers["X-Callback-Token"] = it[2]
   return wrk.format("POST", "/v1/callbacks/" .. it[1] .. "/complete", headers, body)
end

function done(summary, latency, requests)
   local total = 0
   for _, t in ipairs(threads) do
      total = total + (t:get("overrun") or 0)
   end
   io.write(string.format("overrun %d\n", total))
end
