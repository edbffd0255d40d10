-- GET /v2/pet/{id} as JSON for pets drawn at random from BENCH_PET_IDS_FILE, one id a line: the
-- growth mode's reads over up to 10^5 pets (their ids would pass Linux's 128 KiB limit on one
-- environment variable).
local report = dofile((debug.getinfo(1, "S").source:match("^@(.*/)") or "") .. "report.lua")

function init(args)
  local requests = {}
  local name = os.getenv("BENCH_PET_IDS_FILE") or error("BENCH_PET_IDS_FILE must name a file")
  for id in io.lines(name) do
    if id:match("^%d+$") then
      requests[#requests + 1] = report.format("GET", "/v2/pet/" .. id, { ["Accept"] = "application/json" })
    end
  end
  if #requests == 0 then
    error(name .. " holds no pet id")
  end
  request = report.pick_at_random(requests)
end

done = report.done
