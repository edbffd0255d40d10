-- GET /v2/store/order as a customer: each request with the session of one of BENCH_SESSIONS
-- (comma-separated tokens, sent as api_key), in turn. A customer sees its own orders only, so
-- the list's length is the customer's order count, whatever the store holds.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

function init(args)
  local requests = {}
  for _, token in ipairs(report.list("BENCH_SESSIONS")) do
    requests[#requests + 1] = report.format(
      "GET", "/v2/store/order", { ["Accept"] = "application/json", ["api_key"] = token }
    )
  end
  request = report.cycle(requests)
end

done = report.done
