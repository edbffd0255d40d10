-- GET /v2/pet/{id} as JSON, each request for a pet drawn at random from BENCH_PET_IDS: with
-- thousands of pets, a read cache is measured on a working set, not on one hot entry.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

function init(args)
  local requests = {}
  for _, id in ipairs(report.list("BENCH_PET_IDS")) do
    requests[#requests + 1] = report.format("GET", "/v2/pet/" .. id, { ["Accept"] = "application/json" })
  end
  request = report.pick_at_random(requests)
end

done = report.done
