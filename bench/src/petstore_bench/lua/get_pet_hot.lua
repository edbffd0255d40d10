-- GET /v2/pet/{id} as JSON, every request for the same pet (the first of BENCH_PET_IDS): the
-- hot path, one cache entry, against which the random-id scenario's working set is compared.
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

function init(args)
  local hot = report.format("GET", "/v2/pet/" .. report.list("BENCH_PET_IDS")[1], { ["Accept"] = "application/json" })
  request = function()
    return hot
  end
end

done = report.done
