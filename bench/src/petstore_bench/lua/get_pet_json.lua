-- GET /v2/pet/{id} as JSON, cycling over the pet ids in BENCH_PET_IDS.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

function init(args)
  local requests = {}
  for _, id in ipairs(report.list("BENCH_PET_IDS")) do
    requests[#requests + 1] = report.format("GET", "/v2/pet/" .. id, { ["Accept"] = "application/json" })
  end
  request = report.cycle(requests)
end

done = report.done
