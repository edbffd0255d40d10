-- GET /v2/pet/{id} as JSON, each request for a pet drawn at random from BENCH_PET_IDS: with
-- thousands of pets, a read cache is measured on a working set, not on one hot entry.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

local requests = {}

function init(args)
  for _, id in ipairs(report.list("BENCH_PET_IDS")) do
    requests[#requests + 1] = report.format("GET", "/v2/pet/" .. id, { ["Accept"] = "application/json" })
  end
  math.randomseed(os.time() + (tonumber(tostring(requests):match("0x(%x+)"), 16) or 0))
end

function request()
  return requests[math.random(#requests)]
end

done = report.done
