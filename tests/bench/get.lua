-- get.lua: wrk's plain GET of the URL it is given (the dashboard's pages in
-- scripts/bench.sh); no arguments.
function init(args)
end
