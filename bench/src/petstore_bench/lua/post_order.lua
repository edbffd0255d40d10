-- POST /v2/store/order for the pets in BENCH_PET_IDS (gateway -> order -> pet), with BENCH_API_KEY.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

function init(args)
  local headers = {
    ["Content-Type"] = "application/json",
    ["Accept"] = "application/json",
    ["api_key"] = report.list("BENCH_API_KEY")[1],
  }
  local requests = {}
  for _, id in ipairs(report.list("BENCH_PET_IDS")) do
    local body = '{"petId":' .. id .. ',"quantity":1,"shipDate":"2030-01-01T10:00:00Z",'
      .. '"status":"placed","complete":false}'
    requests[#requests + 1] = report.format("POST", "/v2/store/order", headers, body)
  end
  request = report.cycle(requests)
end

done = report.done
