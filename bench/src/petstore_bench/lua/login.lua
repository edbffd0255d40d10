-- GET /v2/user/login for the users in BENCH_USERS, all with the password BENCH_PASSWORD
-- (URL-safe characters only): one argon2 verification per request in the user service.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

function init(args)
  local password = report.list("BENCH_PASSWORD")[1]
  local requests = {}
  for _, username in ipairs(report.list("BENCH_USERS")) do
    local path = "/v2/user/login?username=" .. username .. "&password=" .. password
    requests[#requests + 1] = report.format("GET", path, { ["Accept"] = "application/json" })
  end
  request = report.cycle(requests)
end

done = report.done
