-- POST /v2/store/order with BENCH_API_KEY, each for a pet nobody ordered yet: an order reserves
-- its pet (gateway -> order -> ReservePet on the pet service), and a second order for it is a 409.
-- The pets are the lines of BENCH_ORDER_PETS_FILE; BENCH_ORDER_RANGES gives each wrk thread its
-- own "first-last" lines (1-based, inclusive; the bench cuts a fresh stretch for every run), which
-- the thread orders in turn, each once. Should a thread's range run out, it does not order a pet
-- twice: it counts errors.exhausted, sends a GET the gateway answers 404 (touching no pet), and
-- stops (its connections fall idle while wrk waits out the duration), and the bench fails the
-- run (report.broken) instead of measuring 409s.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

local EXHAUSTED_PATH = "/v2/bench/order-pool-exhausted"

function init(args)
  local ranges = report.list("BENCH_ORDER_RANGES")
  local mine = ranges[bench_thread] or error("BENCH_ORDER_RANGES has no range for thread " .. tostring(bench_thread))
  local first, last = mine:match("^(%d+)-(%d+)$")
  first, last = tonumber(first), tonumber(last)
  if not first or last < first then
    error("BENCH_ORDER_RANGES: " .. mine .. " is not first-last")
  end
  local headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json",
    ["api_key"] = report.list("BENCH_API_KEY")[1],
  }
  local requests = {}
  local line = 0
  for id in io.lines(report.list("BENCH_ORDER_PETS_FILE")[1]) do
    line = line + 1
    if line > last then
      break
    end
    if line >= first then
      local body = '{"petId":' .. id .. ',"quantity":1,"shipDate":"2030-01-01T10:00:00Z",'
        .. '"status":"placed","complete":false}'
      requests[#requests + 1] = report.format("POST", "/v2/store/order", headers, body)
    end
  end
  if #requests ~= last - first + 1 then
    error("BENCH_ORDER_PETS_FILE has no lines " .. mine)
  end
  local exhausted = report.format("GET", EXHAUSTED_PATH, { ["Accept"] = "application/json" })
  bench_exhausted = 0
  local n = 0
  request = function()
    n = n + 1
    if n <= #requests then
      return requests[n]
    end
    bench_exhausted = bench_exhausted + 1
    wrk.thread:stop()
    return exhausted
  end
end

done = report.done
