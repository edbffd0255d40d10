-- Shared by every scenario script (loaded with dofile): helpers, and the done() hook that
-- prints one line of JSON for petstore_bench to parse. Latencies are in microseconds.
local M = {}

M.RESULT_MARKER = "PETSTORE_BENCH_RESULT "

-- The comma-separated values of an environment variable ("" when it is unset).
function M.list(name)
  local items = {}
  for item in string.gmatch(os.getenv(name) or "", "[^,]+") do
    items[#items + 1] = item
  end
  if #items == 0 then
    error(name .. " must list at least one value")
  end
  return items
end

-- wrk.format with wrk's default headers (Host among them) plus `extra`. Call it from init():
-- wrk sets the Host header just before init(), not when the script is loaded.
function M.format(method, path, extra, body)
  local headers = {}
  for name, value in pairs(wrk.headers) do
    headers[name] = value
  end
  for name, value in pairs(extra or {}) do
    headers[name] = value
  end
  return wrk.format(method, path, headers, body)
end

-- Cycles through prepared requests; every wrk thread has its own copy and its own counter.
function M.cycle(requests)
  local n = 0
  return function()
    n = n + 1
    return requests[n % #requests + 1]
  end
end

-- Draws prepared requests at random. The seed mixes in the address of `requests`, which is
-- each wrk thread's own table: threads start within the same second, so os.time() alone would
-- give them all the same sequence.
function M.pick_at_random(requests)
  math.randomseed(os.time() + (tonumber(tostring(requests):match("0x(%x+)"), 16) or 0))
  return function()
    return requests[math.random(#requests)]
  end
end

-- Each wrk thread loads the script into its own Lua state. setup() runs in the main state, once
-- per thread before that thread's init(): it keeps the threads, so that done() can sum their
-- counters (thread:get), and numbers them: a thread's global bench_thread is 1, 2, ...
-- (post_order.lua takes its share of the pets by it). A script defining its own setup() loses both.
local threads = {}

function setup(thread)
  threads[#threads + 1] = thread
  thread:set("bench_thread", #threads)
end

-- Opt-in: count every response below 400 whose status is not `code` (wrk counts only statuses
-- of 400 and more as errors, so a 200 where a 304 is due would pass unseen). Call it at the top
-- level of a scenario script: each thread counts in its global bench_unexpected, and done()
-- sums the counts into errors.unexpected.
function M.expect_status(code)
  bench_unexpected = 0
  function response(status, headers, body)
    if status ~= code and status < 400 then
      bench_unexpected = bench_unexpected + 1
    end
  end
end

-- The sum over the threads of a counter each keeps in a global (0 where it has none).
local function summed(name)
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + (tonumber(thread:get(name)) or 0)
  end
  return total
end

function M.done(summary, latency, requests)
  local e = summary.errors
  local min, max, mean, stdev = 0, 0, 0, 0
  local function percentile(q)
    return 0
  end
  if summary.requests > 0 then
    min, max, mean, stdev = latency.min, latency.max, latency.mean, latency.stdev
    percentile = function(q)
      return latency:percentile(q)
    end
  end
  io.write(M.RESULT_MARKER, string.format(
    '{"requests":%d,"duration_us":%d,"bytes":%d,'
      .. '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"unexpected":%d,'
      .. '"exhausted":%d},'
      .. '"latency_us":{"min":%d,"max":%d,"mean":%.1f,"stdev":%.1f,'
      .. '"p50":%d,"p75":%d,"p90":%d,"p99":%d,"p999":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout, summed("bench_unexpected"), summed("bench_exhausted"),
    min, max, mean, stdev,
    percentile(50), percentile(75), percentile(90), percentile(99), percentile(99.9)
  ))
end

return M
