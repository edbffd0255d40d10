-- GET /v2/pet/{id} as XML (Accept: application/xml), cycling over the ids in BENCH_PET_IDS.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

function init(args)
  local requests = {}
  for _, id in ipairs(report.list("BENCH_PET_IDS")) do
    requests[#requests + 1] = report.format("GET", "/v2/pet/" .. id, { ["Accept"] = "application/xml" })
  end
  request = report.cycle(requests)
end

done = report.done
